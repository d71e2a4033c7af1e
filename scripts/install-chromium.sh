#!/usr/bin/env bash
# Installs Chromium (Debian's chromium) when /usr/bin/chromium is missing:
# the dashboard's browser tests (go test -tags browser ./internal/ui) drive
# it headless with chromedp, and fail without it. PIPELINE_CHROMIUM may
# name another Chromium or Chrome binary for them.
exec "$(dirname "$0")/apt-install.sh" chromium "test -x /usr/bin/chromium" \
	"the dashboard's browser tests drive it; or set PIPELINE_CHROMIUM to a Chromium or Chrome binary"
