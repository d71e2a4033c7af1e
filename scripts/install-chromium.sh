#!/usr/bin/env bash
# Installs Chromium (Debian's chromium) when /usr/bin/chromium is missing:
# the dashboard's browser tests (go test -tags browser ./internal/ui) drive
# it headless with chromedp, and fail without it. CI runs as root on
# Debian with apt reachable and no standard input; elsewhere, sudo -n is
# tried, or the script says what to install.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "chromium is missing and there is no apt-get here: install Chromium at /usr/bin/chromium, or set PIPELINE_CHROMIUM to a Chromium or Chrome binary" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "chromium is missing: install it as root with: apt-get install -y chromium" >&2
		exit 1
	fi
	sudo=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
echo "installing chromium with apt-get (once)"
# The package lists of a fresh image may be empty or stale: update once
# when the install cannot find the package.
if ! "${sudo[@]}" apt-get -q install -y --no-install-recommends chromium </dev/null; then
	"${sudo[@]}" apt-get -q update </dev/null
	"${sudo[@]}" apt-get -q install -y --no-install-recommends chromium </dev/null
fi
[ -x /usr/bin/chromium ]
