#!/bin/sh
# The offline quickstart, as make run shows it: a fresh copy of
# examples/quickstart in DIR, made a git repository of its own (DIR is
# under bin/, which the project's git ignores: without its own repository
# the session would keep no checkpoints, and say so first), run to its
# checkpoint (exit 3), then resumed with notes to the end.
# Usage: scripts/quickstart.sh PIPELINE DIR
set -eu
bin=$1 dir=$2
rm -rf "$dir"
cp -r "$(dirname "$0")/../examples/quickstart" "$dir"
if command -v git >/dev/null 2>&1; then
	git -C "$dir" init -q
	git -C "$dir" add -A
	git -C "$dir" -c user.name=quickstart -c user.email=quickstart@example.invalid -c commit.gpgsign=false \
		commit -qm "the quickstart, as examples/quickstart has it"
fi
code=0
"$bin" run "$dir/phases.yaml" || code=$?
if [ "$code" -ne 3 ]; then
	echo "make run: expected the checkpoint pause (exit 3), got exit $code"
	exit 1
fi
echo
echo "make run: paused at the checkpoint, as the quickstart shows; now: pipeline resume --notes ..."
echo
show() {
	echo "$*"
	"$@"
}
show "$bin" resume --file "$dir/phases.yaml" --notes "the design is fine; go on"
show "$bin" status --file "$dir/phases.yaml" --verbose
show "$bin" memory --file "$dir/phases.yaml"
