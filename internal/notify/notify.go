// Package notify tells people that a session stopped, without a hook of
// their own: a desktop notification, and webhooks in the formats Slack,
// Discord and ntfy take, or the status object as JSON. Each is bounded
// (5 s a try, 2 retries) and a failure is the caller's warning: a
// notification never changes a session's outcome.
package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/web"
)

// Message is what a notification says of a session that stopped.
type Message struct {
	// Event is paused, needs-human, failed or completed.
	Event string
	// Title is one line: "pipeline shop paused in phase review".
	Title string
	// Text says why, the note, the last error line, and the command that
	// resumes it.
	Text string
	// Status is the session as pipeline status -o json prints it.
	Status engine.StatusReport
}

// Timeout bounds each try of a webhook; Retries are the tries after the
// first.
const (
	Timeout = 5 * time.Second
	Retries = 2
)

// Compose writes the message for a session that stopped: redact makes
// each value from the session safe to send; lastError is the last line of
// the step that failed ("" for none).
func Compose(event string, r engine.StatusReport, lastError string, redact func(string) string) Message {
	what := event
	if event == spec.HookNeedsHuman {
		what = "needs a human"
	}
	title := fmt.Sprintf("pipeline %s %s in phase %s", r.Pipeline, what, r.Phase)
	if event == spec.HookCompleted {
		title = fmt.Sprintf("pipeline %s completed", r.Pipeline)
	}
	var lines []string
	switch {
	case r.PauseReason != "" && r.PauseNote != "":
		lines = append(lines, "why: "+r.PauseReason+": "+r.PauseNote)
	case r.PauseReason != "":
		lines = append(lines, "why: "+r.PauseReason)
	case r.FailReason != "":
		lines = append(lines, "why: "+r.FailReason)
	}
	if lastError != "" {
		lines = append(lines, "last error: "+lastError)
	}
	if r.Spec != "" {
		lines = append(lines, "spec: "+r.Spec)
	}
	switch event {
	case spec.HookPaused, spec.HookNeedsHuman, spec.HookFailed:
		lines = append(lines, "resume: pipeline resume "+r.ID)
	default:
		lines = append(lines, fmt.Sprintf("session %s: %d tokens, $%.4f, %s", r.ID, r.Tokens, r.CostUSD, r.Elapsed))
	}
	text := redact(strings.Join(lines, "\n"))
	return Message{Event: event, Title: redact(title), Text: text, Status: r}
}

// Post posts m to the webhook w, whose URL may name environment
// variables (${NAME}); getenv reads them.
func Post(ctx context.Context, w spec.Webhook, m Message, getenv func(string) string) error {
	url := os.Expand(strings.TrimSpace(w.URL), getenv)
	if url == "" || (!strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://")) {
		return fmt.Errorf("its URL %s is not an http(s) URL once the environment is read", w.URL)
	}
	body, contentType, err := payload(w.Format, m)
	if err != nil {
		return err
	}
	var last error
	for try := 0; try <= Retries; try++ {
		if try > 0 {
			// A moment for a service that stumbled, bounded as the
			// tries are.
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(try) * 250 * time.Millisecond):
			}
		}
		if last = post(ctx, url, body, contentType, w.Format, m); last == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("%s: %w", hostOf(url), last)
}

func post(ctx context.Context, url string, body []byte, contentType, format string, m Message) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	header := [][2]string{{"Content-Type", contentType}, {"User-Agent", "pipeline"}}
	if format == spec.FormatNtfy {
		header = append(header, [2]string{"Title", m.Title}, [2]string{"Tags", m.Event})
		if m.Event != spec.HookCompleted {
			header = append(header, [2]string{"Priority", "high"})
		}
	}
	// The error leaves out the URL: a webhook's URL is its secret
	// (Slack's, Discord's).
	resp, err := web.Post(ctx, web.Request{URL: url, Header: header, Body: body})
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// payload is the body a service takes: Slack's {"text"}, Discord's
// {"content"} (at most 2,000 characters), ntfy's plain text, or the
// status object.
func payload(format string, m Message) ([]byte, string, error) {
	text := m.Title + "\n" + m.Text
	switch format {
	case spec.FormatSlack:
		b, err := json.Marshal(map[string]string{"text": text})
		return b, "application/json", err
	case spec.FormatDiscord:
		if runes := []rune(text); len(runes) > 2000 {
			text = string(runes[:1999]) + "…"
		}
		b, err := json.Marshal(map[string]string{"content": text})
		return b, "application/json", err
	case spec.FormatNtfy:
		return []byte(m.Text), "text/plain; charset=utf-8", nil
	case spec.FormatJSON, "":
		b, err := json.Marshal(struct {
			Event string `json:"event"`
			engine.StatusReport
		}{m.Event, m.Status})
		return b, "application/json", err
	}
	return nil, "", fmt.Errorf("format %q is not one of %s", format, strings.Join(spec.WebhookFormats, ", "))
}

// hostOf names a webhook by its scheme and host alone: the rest of its
// URL is often its secret.
func hostOf(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil || u.Host == "" {
		return "the webhook"
	}
	return u.Scheme + "://" + u.Host
}

// ErrNoDesktop is a machine with no way to show a desktop notification.
var ErrNoDesktop = errors.New("no notify-send (Linux) or osascript (macOS) on PATH")

// Desktop shows m on the desktop.
func Desktop(ctx context.Context, m Message) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	var cmd *exec.Cmd
	if runtime.GOOS == "darwin" {
		if _, err := exec.LookPath("osascript"); err != nil {
			return ErrNoDesktop
		}
		script := fmt.Sprintf("display notification %s with title %s", appleString(m.Text), appleString(m.Title))
		cmd = exec.CommandContext(ctx, "osascript", "-e", script)
	} else {
		if _, err := exec.LookPath("notify-send"); err != nil {
			return ErrNoDesktop
		}
		urgency := "normal"
		if m.Event != spec.HookCompleted {
			urgency = "critical"
		}
		cmd = exec.CommandContext(ctx, "notify-send", "--app-name=pipeline", "--urgency="+urgency, "--", m.Title, m.Text)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// appleString quotes s for AppleScript.
func appleString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
