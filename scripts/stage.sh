#!/usr/bin/env bash
# One stage of make test or make lint: stage.sh NAME COMMAND [ARG...] runs
# COMMAND between two lines, so that a long run says what it is doing and
# what each part cost:
#
#   == tests: cmd/pipeline, agent CLIs [at 4m10s]
#   ...
#   == tests: cmd/pipeline, agent CLIs: ok in 3m05s [at 7m15s]
#
# "at" counts from STAGE_T0 (seconds since the epoch), which the Makefile
# sets once when make starts; the exit status is COMMAND's.
set -uo pipefail
name=$1
shift
t0=${STAGE_T0:-$(date +%s)}
mmss() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
start=$(date +%s)
echo "== $name [at $(mmss $((start - t0)))]"
"$@"
code=$?
end=$(date +%s)
if [ "$code" -eq 0 ]; then
	echo "== $name: ok in $(mmss $((end - start))) [at $(mmss $((end - t0)))]"
else
	echo "== $name: FAILED (exit $code) after $(mmss $((end - start))) [at $(mmss $((end - t0)))]"
fi
exit "$code"
