#!/usr/bin/env bash
# The first stage of make test: free space where the tests write. A full
# disk otherwise shows as dozens of "no space left on device" lines from
# go vet, the compiler and npm at once, none saying what to do.
#
# diskcheck.sh MIN_GIB WARN_GIB: fails when a folder the tests write to
# (the Go build cache, the temporary folder, the project's .cache) has
# less than MIN_GIB free, and says so under WARN_GIB.
set -uo pipefail
min=${1:-2}
warn=${2:-12}
gocache=$(go env GOCACHE 2>/dev/null || true)
tmp=${TMPDIR:-/tmp}
code=0
seen=" "
for dir in "$gocache" "$tmp" "$PWD"; do
	[ -n "$dir" ] || continue
	probe=$dir
	while [ ! -d "$probe" ]; do probe=$(dirname "$probe"); done
	read -r free_kib mount < <(df -Pk "$probe" | awk 'NR == 2 { print $4, $6 }')
	case $seen in *" $mount "*) continue ;; esac
	seen="$seen$mount "
	free_gib=$((free_kib / 1024 / 1024))
	if [ "$free_kib" -lt $((min * 1024 * 1024)) ]; then
		echo "only ${free_gib} GiB free for $dir (on $mount); make test needs at least ${min} GiB, about ${warn} GiB with nothing installed yet."
		if [ "$dir" = "$gocache" ]; then
			echo "  the Go build cache holds $(du -sh "$dir" 2>/dev/null | cut -f1); 'go clean -cache' empties it (the next build compiles everything again)."
		fi
		code=1
	elif [ "$free_kib" -lt $((warn * 1024 * 1024)) ]; then
		echo "note: ${free_gib} GiB free for $dir; a first make test, which installs the agent CLIs, Temporal and Jaeger, may need about ${warn} GiB."
	fi
done
exit "$code"
