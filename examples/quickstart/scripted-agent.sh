#!/bin/sh
# A scripted stand-in for an agent CLI: it prints a few lines of work for the
# prompt it is given, and in the design phase it stops once at a checkpoint
# so the quickstart shows a pause and a resume. Its [DECISION], [TODO],
# [DONE] and [SUMMARY] lines feed the session's working set (pipeline
# memory shows it).
prompt="$1"
echo "agent: working on: $prompt"
case "$prompt" in
*design*)
	if [ ! -f .design-checkpoint ]; then
		: > .design-checkpoint
		echo "agent: drafted the design"
		echo "[DECISION] the tool writes its greeting to greeting.txt, in plain text"
		echo "[TODO] write greeting.txt with the greeting"
		echo "[CHECKPOINT] design drafted; review it before implementation"
		sleep 30
		exit 0
	fi
	echo "agent: design reviewed, moving on"
	echo "[SUMMARY] design done: one file, greeting.txt, holding hello"
	;;
*Implement*)
	echo hello > greeting.txt
	echo "agent: wrote greeting.txt"
	echo "[DONE] wrote greeting.txt with the greeting"
	;;
*)
	echo "agent: all done"
	;;
esac
