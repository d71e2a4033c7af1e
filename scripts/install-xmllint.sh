#!/usr/bin/env bash
# Installs xmllint (Debian's libxml2-utils) when it is not on PATH: the
# tests validate the JUnit report (pipeline run --junit) against a JUnit
# XML schema with it, and fail without it. CI runs as root on Debian with
# apt reachable and no standard input; elsewhere, sudo -n is tried, or
# the script says what to install.
set -euo pipefail
if command -v xmllint >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "xmllint is missing and there is no apt-get here: install libxml2's xmllint (Debian: libxml2-utils, macOS: it comes with the system, Homebrew: libxml2)" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "xmllint is missing: install it as root with: apt-get install -y libxml2-utils" >&2
		exit 1
	fi
	sudo=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing libxml2-utils (xmllint) with apt-get (once)"
# The package lists of a fresh image may be empty or stale: update once
# when the install cannot find the package.
if ! "${sudo[@]}" apt-get -q install -y --no-install-recommends libxml2-utils </dev/null; then
	"${sudo[@]}" apt-get -q update </dev/null
	"${sudo[@]}" apt-get -q install -y --no-install-recommends libxml2-utils </dev/null
fi
command -v xmllint >/dev/null
