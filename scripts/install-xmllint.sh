#!/usr/bin/env bash
# Installs xmllint (Debian's libxml2-utils) when it is not on PATH: the
# tests validate the JUnit report (pipeline run --junit) against a JUnit
# XML schema with it, and fail without it. macOS has it with the system;
# Homebrew's libxml2 has it too.
exec "$(dirname "$0")/apt-install.sh" libxml2-utils "command -v xmllint" \
	"the JUnit report's tests validate it against a schema with xmllint"
