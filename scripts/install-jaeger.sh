#!/usr/bin/env bash
# Builds Jaeger (v2: the all-in-one binary, an OpenTelemetry collector with
# Jaeger's storage, query API and UI), which the tests under the build tag
# jaeger start on loopback to read back the spans that pipeline exports,
# from the Go module proxy into .cache/bin/jaeger-$VERSION (gitignored),
# once per machine: a later run finds the binary and does nothing.
#
# go install refuses the module (its go.mod has replace directives), so the
# build goes through a throwaway module: go get -tool pins Jaeger and its
# dependencies as Jaeger's go.mod asks, then go build builds the command.
# About 6 minutes of CPU the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=1.76.0
MODULE=github.com/jaegertracing/jaeger
dir=.cache/bin/jaeger-$VERSION
bin=$dir/jaeger

built() {
	[ -x "$1" ] \
		&& "$GO" version -m "$1" 2>/dev/null | grep -qE "^[[:space:]]+(mod|dep)[[:space:]]+$MODULE[[:space:]]+v$VERSION([[:space:]]|\$)" \
		&& "$1" version >/dev/null 2>&1
}

if built "$bin"; then
	exit 0
fi
echo "building Jaeger (once, about 6 minutes of CPU): $MODULE/cmd/jaeger@v$VERSION into $dir"
mkdir -p .cache/bin
# In a directory of its own first: an interrupted build leaves no binary at
# $bin that a later run would take for a finished one.
tmp=$(mktemp -d "$PWD/.cache/bin/jaeger-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(
	cd "$tmp"
	"$GO" mod init jaeger-build >/dev/null 2>&1
	"$GO" get -tool "$MODULE/cmd/jaeger@v$VERSION"
	CGO_ENABLED=0 "$GO" build -o jaeger "$MODULE/cmd/jaeger"
)
if ! built "$tmp/jaeger"; then
	echo "install-jaeger.sh: the binary built from $MODULE@v$VERSION does not run or is not that version" >&2
	exit 1
fi
mkdir -p "$dir"
mv -f "$tmp/jaeger" "$bin"
