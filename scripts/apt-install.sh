#!/usr/bin/env bash
# apt-install.sh PACKAGE CHECK WHY: installs Debian's PACKAGE with apt-get
# when the shell test CHECK (e.g. "command -v xmllint") fails. CI runs as
# root on Debian with apt reachable and no standard input; elsewhere,
# sudo -n is tried, or the script says what to install (WHY says what for).
set -euo pipefail
package=$1 check=$2 why=$3
if eval "$check" >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "$package is missing and there is no apt-get here: install it ($why)" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "$package is missing: install it as root with: apt-get install -y $package ($why)" >&2
		exit 1
	fi
	sudo=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing $package with apt-get (once)"
# The package lists of a fresh image may be empty or stale: update once
# when the install cannot find the package.
if ! "${sudo[@]}" apt-get -q install -y --no-install-recommends "$package" </dev/null; then
	"${sudo[@]}" apt-get -q update </dev/null
	"${sudo[@]}" apt-get -q install -y --no-install-recommends "$package" </dev/null
fi
eval "$check" >/dev/null
