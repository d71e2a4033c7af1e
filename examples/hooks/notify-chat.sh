#!/bin/sh
# Posts one line about the session to a chat webhook that takes
# {"text": "..."} (Slack, Mattermost, Rocket.Chat, Google Chat).
set -eu
: "${CHAT_WEBHOOK_URL:?set CHAT_WEBHOOK_URL to your chat's incoming webhook}"
text="pipeline session $PIPELINE_SESSION is $PIPELINE_STATUS in phase $PIPELINE_PHASE"
[ -n "$PIPELINE_REASON" ] && text="$text: $PIPELINE_REASON"
[ -n "$PIPELINE_NOTE" ] && text="$text ($PIPELINE_NOTE)"
# JSON-escape: control characters out, backslashes and quotes escaped.
escaped=$(printf '%s' "$text" | tr '\n\r\t' '   ' | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g')
printf '{"text": "%s"}' "$escaped" |
	curl -fsS --max-time 10 -H 'Content-Type: application/json' --data-binary @- "$CHAT_WEBHOOK_URL"
