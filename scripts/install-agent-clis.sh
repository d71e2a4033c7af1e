#!/usr/bin/env bash
# Installs the pinned agent CLIs from npm into .cache/npm (gitignored), once:
# a later run with the same versions does nothing. The tests of the claude,
# gemini and codex adapters run these real programs against local mocks.
set -euo pipefail
cd "$(dirname "$0")/.."
CLAUDE=@anthropic-ai/claude-code@2.1.332
GEMINI=@google/gemini-cli@0.61.0
CODEX=@openai/codex@0.169.0
dir=.cache/npm
stamp="$dir/installed"
want="$CLAUDE $GEMINI $CODEX"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$dir/node_modules/.bin/claude" ] \
	&& [ -x "$dir/node_modules/.bin/gemini" ] && [ -x "$dir/node_modules/.bin/codex" ]; then
	exit 0
fi
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"name":"pipeline-agent-clis","private":true}' > "$dir/package.json"
echo "installing $want into $dir (once)"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $want
echo "$want" > "$stamp"
