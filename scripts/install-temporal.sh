#!/usr/bin/env bash
# Builds the Temporal CLI, whose `temporal server start-dev` is the dev server
# that the tests under the build tag temporal start, from the Go module proxy
# into .cache/bin/temporal-$VERSION (gitignored), once per machine: a later run
# finds the binary and does nothing. A binary already there (built by hand) is
# kept when it is this version.
#
# v1.5.1 is pinned: later versions need a module the proxy does not serve.
# Its `temporal --version` says 0.0.0-DEV (go install sets no release
# version), so the version is read from the module path the binary records
# (go version -m), and --version only proves that it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=1.5.1
MODULE=github.com/temporalio/cli
dir=.cache/bin/temporal-$VERSION
bin=$dir/temporal

built() {
	[ -x "$1" ] \
		&& "$GO" version -m "$1" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]]+$MODULE[[:space:]]+v$VERSION([[:space:]]|\$)" \
		&& "$1" --version 2>/dev/null | grep -q '^temporal version '
}

if built "$bin"; then
	exit 0
fi
echo "building the Temporal dev server (once, about 6 minutes of CPU): $MODULE/cmd/temporal@v$VERSION into $dir"
mkdir -p .cache/bin
# Into a directory of its own first: an interrupted build leaves no binary
# at $bin that a later run would take for a finished one.
tmp=$(mktemp -d .cache/bin/temporal-build.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
GOBIN=$PWD/$tmp "$GO" install "$MODULE/cmd/temporal@v$VERSION"
if ! built "$tmp/temporal"; then
	echo "install-temporal.sh: the binary built from $MODULE@v$VERSION does not run or is not that version" >&2
	exit 1
fi
mkdir -p "$dir"
mv -f "$tmp/temporal" "$bin"
