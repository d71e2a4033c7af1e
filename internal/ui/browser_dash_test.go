//go:build browser

package ui_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The session page's timeline draws each phase's attempts and the runs of
// their steps on the wall clock: the pause between design's two runs as
// a band, the checkpoint that fired on design's first run (its note on
// hover), and build's failed attempt and its retry, marked ↻.
func TestBrowserTimelineDrawsAttemptsAndSteps(t *testing.T) {
	dir, id := retriedSession(t)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/session/"+id), visible(`body[data-loaded] #gantt svg rect.step`))
	steps := eval[[]string](t, ctx, `[...document.querySelectorAll("#gantt rect.step")].map(r => r.dataset.phase + "/" + r.dataset.attempt + "/" + r.dataset.step + ":" + r.classList[1])`)
	// The checkpoint's step may end before the runner stops it, or be
	// stopped: either way it is design's first run.
	if got := strings.Replace(strings.Join(steps, ","), "design/1/agent:stopped", "design/1/agent:ok", 1); got != "design/1/agent:ok,design/1/agent:ok,build/1/agent:failed,build/2/agent:ok" {
		t.Errorf("step bars %q: want design's two runs in attempt 1, build's failed attempt 1 and its attempt 2", steps)
	}
	xs := eval[[]float64](t, ctx, `[...document.querySelectorAll("#gantt rect.step")].map(r => +r.getAttribute("x"))`)
	for i := 1; i < len(xs); i++ {
		if xs[i] < xs[i-1] {
			t.Errorf("step bars' x %v: each run starts after the one before, on the wall clock", xs)
		}
	}
	if phases := eval[[]string](t, ctx, `[...document.querySelectorAll("#gantt rect.bar")].map(r => r.dataset.phase + ":" + r.dataset.attempts)`); strings.Join(phases, ",") != "design:1,build:2" {
		t.Errorf("phase bars %q: want design with 1 attempt, build with 2", phases)
	}
	if retry := eval[[]string](t, ctx, `[...document.querySelectorAll("#gantt .mark.retry")].map(m => m.dataset.attempt)`); strings.Join(retry, ",") != "2" {
		t.Errorf("retry marks on attempts %q, want build's attempt 2", retry)
	}
	fired := eval[string](t, ctx, `[...document.querySelectorAll("#gantt .mark.fired title")].map(t => t.textContent).join("|")`)
	if !strings.Contains(fired, "checkpoint") || !strings.Contains(fired, "design drafted; review it") {
		t.Errorf("the fired trigger's hover text %q: want the checkpoint and its note", fired)
	}
	band := eval[string](t, ctx, `(document.querySelector('#gantt rect.pause-band[data-reason="checkpoint"] title') || {}).textContent || ""`)
	if !strings.Contains(band, "paused at design") || !strings.Contains(band, "design drafted; review it") {
		t.Errorf("the pause band's hover text %q", band)
	}
	screenshot(t, ctx, "session-timeline")
}

// The sessions page has the columns; a page at a time (?limit=),
// the pager moves to the older ones; the status filter asks the server.
func TestBrowserSessionsPageColumnsAndPages(t *testing.T) {
	dir, retried := retriedSession(t)
	os.Remove(filepath.Join(dir, ".checkpointed"))
	older := pausedSession(t, dir)
	os.Remove(filepath.Join(dir, ".checkpointed"))
	newest := pausedSession(t, dir)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/?limit=2"), visible(fmt.Sprintf(`tr[data-id=%q]`, newest)))
	heads := eval[[]string](t, ctx, `[...document.querySelectorAll("#sessions thead th")].map(th => th.textContent)`)
	if strings.Join(heads, ",") != "Session,Pipeline,Spec,Status,Phase,Attempts,Tokens,Cost,Started,Duration" {
		t.Errorf("columns %q", heads)
	}
	if rows := eval[[]string](t, ctx, `[...document.querySelectorAll("#sessions tbody tr")].map(r => r.dataset.id)`); strings.Join(rows, ",") != newest+","+older {
		t.Errorf("the first page: %q, want %s, %s", rows, newest, older)
	}
	if pageOf := text(t, ctx, `#page-of`); pageOf != "1–2 of 3" {
		t.Errorf("the pager says %q", pageOf)
	}
	do(t, ctx, click(`#older`), visible(fmt.Sprintf(`tr[data-id=%q]`, retried)))
	row := fmt.Sprintf(`tr[data-id=%q]`, retried)
	if attempts, phase := text(t, ctx, row+" td.attempts"), text(t, ctx, row+" td.phase"); attempts != "3" || !strings.Contains(phase, "build (2 of 2)") {
		t.Errorf("the retried session's attempts %q and phase %q: want 3, build (2 of 2)", attempts, phase)
	}
	screenshot(t, ctx, "sessions-pages")
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#status-filter`), "paused"))
	eval[bool](t, ctx, `document.getElementById("status-filter").dispatchEvent(new Event("change"))`)
	do(t, ctx, visible(fmt.Sprintf(`tr[data-id=%q]`, newest)))
	if count := text(t, ctx, `#count`); !strings.HasPrefix(count, "2 of 3 session(s)") {
		t.Errorf("the count with status paused: %q", count)
	}
}

// A session that runs on a fleet is listed with the local ones, marked
// with where it runs.
func TestBrowserFleetSessionIsMarked(t *testing.T) {
	dir := project(t)
	local := pausedSession(t, dir)
	onFleet := "20261127-100000000-f1ee70"
	fleetCopy(t, dir, onFleet)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/"), visible(fmt.Sprintf(`tr[data-id=%q] span.on-fleet`, onFleet)), visible(fmt.Sprintf(`tr[data-id=%q]`, local)))
	title := eval[string](t, ctx, fmt.Sprintf(`document.querySelector('tr[data-id=%q] span.on-fleet').title`, onFleet))
	if title != "runs on Temporal at 10.0.0.7:7233 (namespace ci)" {
		t.Errorf("the fleet mark says %q", title)
	}
	if n := eval[int](t, ctx, fmt.Sprintf(`document.querySelectorAll('tr[data-id=%q] span.on-fleet').length`, local)); n != 0 {
		t.Errorf("the local session is marked as a fleet's")
	}
}

// Each action from the session page is the command's: a fact pinned and a
// task added and closed show in the working set; notes left with pause
// on a paused session and a resume at build reach build's prompt; a
// refusal (a fork outside the folder served, a resume of a completed
// session) shows the command's message.
func TestBrowserActionsFromThePage(t *testing.T) {
	dir := gitProject(t)
	id := pausedSession(t, dir)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/session/"+id), visible(`body[data-status="paused"]`),
		chromedp.SendKeys(chromedp.CSS(`#fact`), "the greeting is in English"),
		click(`#pin`),
		visible(`ul[data-list="pinned facts"] li`),
		chromedp.SendKeys(chromedp.CSS(`#task`), "check the spelling"),
		click(`#add-task`),
		visible(`ul[data-list="open tasks"] li button[data-done]`),
		click(`ul[data-list="open tasks"] li button[data-done]`),
		visible(`ul[data-list="done tasks"] li`))
	if facts := text(t, ctx, `ul[data-list="pinned facts"]`); !strings.Contains(facts, "the greeting is in English") {
		t.Errorf("pinned facts shown: %q", facts)
	}
	if done := text(t, ctx, `ul[data-list="done tasks"]`); !strings.Contains(done, "check the spelling") {
		t.Errorf("done tasks shown: %q", done)
	}
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#phase-select`), "design"),
		click(`#fork`), visible(`#error`))
	if msg := text(t, ctx, `#error`); !strings.Contains(msg, "where it would not be listed") {
		t.Errorf("the fork's refusal shown: %q", msg)
	}
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#notes`), "mind the exclamation mark"),
		click(`#pause`))
	// The pause's answer, not the task's still shown.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("result").textContent.startsWith("pause")`)); err != nil {
		t.Fatalf("waiting for the pause's answer: %v", err)
	}
	// The notes box emptied: the notes that reach build come from the
	// pause, not from the resume.
	eval[bool](t, ctx, `document.getElementById("notes").value = "", true`)
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`#phase-select`), "build"),
		click(`#resume-at`),
		visible(`body[data-status="completed"]`))
	prompts, _ := os.ReadFile(filepath.Join(dir, "prompts.txt"))
	last := string(prompts)[strings.LastIndex(strings.TrimSuffix(string(prompts), "---\n"), "---\n")+4:]
	if !strings.Contains(last, "Build the greeting") || !strings.Contains(last, "mind the exclamation mark") {
		t.Errorf("the prompt of the resume at build:\n%s\nwant build's, with the pause's notes", last)
	}
	do(t, ctx, click(`#resume`), visible(`#error`))
	if msg := text(t, ctx, `#error`); !strings.Contains(msg, "is completed: there is nothing to resume") {
		t.Errorf("the resume's refusal shown: %q", msg)
	}
	screenshot(t, ctx, "session-actions")
}
