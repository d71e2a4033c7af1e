//go:build browser

package ui_test

// The dashboard in a real browser: Debian's Chromium (make test installs
// it with scripts/install-chromium.sh; PIPELINE_CHROMIUM names another),
// headless, driven with chromedp, against the built pipeline ui. Each test
// saves a screenshot of the page it looked at into bin/ui-screenshots.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pipeline-dev/pipeline/internal/browsertest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// screenshots is the folder the pages' screenshots go to (bin/ is not
// committed).
const screenshots = "../../bin/ui-screenshots"

// startUI runs pipeline ui on a free loopback port in dir, and returns its
// URL as it printed it.
func startUI(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command(binary, "ui", "--addr", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`).FindString(line)
	if err != nil || url == "" {
		t.Fatalf("pipeline ui printed %q (%v): want its URL", line, err)
	}
	return strings.TrimSuffix(url, "/")
}

// browser is a headless Chromium tab, closed when the test ends (see
// browsertest.New); each wait in it ends at testwait.Failsafe.
func browser(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(browsertest.New(t, chromedp.WindowSize(1280, 800)), testwait.Failsafe)
	t.Cleanup(cancel)
	return ctx
}

// do runs the actions in the tab.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// text is the visible text of the element sel, once there is one. It is
// found and read in one call in the page: chromedp.Text finds the node,
// then reads it by its id in a second call, and a page that redraws in
// between (the sessions' summary does, on each change the UI streams)
// failed it with "No node with given id found".
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	const read = `(sel) => {
		const el = document.querySelector(sel);
		if (!el) return null;
		const shown = el.offsetWidth || el.offsetHeight || el.getClientRects().length;
		return {text: shown ? el.innerText : ""};
	}`
	found, err := chromedp.Run(ctx, chromedp.PollFunction[struct{ Text string }](read,
		chromedp.WithPollingArgs(sel), chromedp.WithPollingTimeout(0)))
	if err != nil {
		t.Fatalf("the text of %s: %v", sel, err)
	}
	return found.Text
}

// eval is what the script returns.
func eval[T any](t *testing.T, ctx context.Context, script string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script, opts...))
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return v
}

// click clicks the element sel once there is one, found and clicked in
// one call in the page. chromedp.Click finds the node, then clicks where
// it was: a list the page redrew in between (on the change the previous
// action streams back) took the click elsewhere, and
// TestBrowserActionsFromThePage waited for its result until the failsafe
// (once, in make test beside the other stages).
func click(sel string) chromedp.Action[chromedp.Void] {
	const clickIt = `(sel) => {
		const el = document.querySelector(sel);
		if (!el) return false;
		el.click();
		return true;
	}`
	return chromedp.PollFunction[chromedp.Void](clickIt, chromedp.WithPollingArgs(sel), chromedp.WithPollingTimeout(0))
}

// visible waits for the element sel.
func visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

// screenshot saves the page as NAME.png (quality 100 is a PNG).
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	os.MkdirAll(screenshots, 0o755)
	path := filepath.Join(screenshots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func TestBrowserSessionsPageListsAPausedSession(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	url := startUI(t, dir)
	ctx := browser(t)
	row := fmt.Sprintf(`tr[data-id=%q]`, id)
	do(t, ctx, chromedp.Navigate(url+"/"), visible(row))
	idText, phase, state := text(t, ctx, row+" td.id"), text(t, ctx, row+" td.phase"), text(t, ctx, row+" td.state")
	if idText != id || !strings.Contains(phase, "design (1 of 2)") || !strings.Contains(state, "paused") || !strings.Contains(state, "checkpoint") {
		t.Errorf("the row: id %q, phase %q, status %q; want %s, design (1 of 2), paused (checkpoint)", idText, phase, state, id)
	}
	screenshot(t, ctx, "sessions")
}

func TestBrowserSessionPageDrawsABarPerPhase(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/session/"+id), visible(`body[data-loaded] #gantt svg`))
	bars := eval[[]string](t, ctx, `[...document.querySelectorAll("#gantt rect.bar")].map(r => r.dataset.phase + ":" + r.getAttribute("class"))`)
	if strings.Join(bars, ",") != "design:bar paused,build:bar pending" {
		t.Errorf("bars %q: want one per phase, design paused and build pending", bars)
	}
	if transcript := text(t, ctx, "#logs"); !strings.Contains(transcript, "drafting the greeting design") {
		t.Errorf("the transcript shown: %q", transcript)
	}
	// What the next step would be told: the resume context, with why.
	if context := text(t, ctx, "#resume-context"); !strings.Contains(context, "design") {
		t.Errorf("the resume context shown: %q", context)
	}
	screenshot(t, ctx, "session")
}

func TestBrowserResumeWithANoteCompletes(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/session/"+id),
		visible(`body[data-status="paused"]`),
		chromedp.SendKeys(chromedp.CSS(`#notes`), "keep it under ten words"),
		click(`#resume`),
		// The page follows /api/events: the session's completion shows
		// without a reload.
		visible(`body[data-status="completed"]`))
	prompts, _ := os.ReadFile(filepath.Join(dir, "prompts.txt"))
	if !strings.Contains(string(prompts), "keep it under ten words") {
		t.Errorf("the agent's prompts:\n%s\nwant the note in one", prompts)
	}
	bars := eval[[]string](t, ctx, `[...document.querySelectorAll("#gantt rect.bar")].map(r => r.getAttribute("class"))`)
	if strings.Join(bars, ",") != "bar completed,bar completed" {
		t.Errorf("bars after the resume: %q, want both completed", bars)
	}
	screenshot(t, ctx, "session-resumed")
}

// A session that pauses while the page is open shows without a reload:
// a mark set on the window before is still there after.
func TestBrowserSessionsPageIsLive(t *testing.T) {
	dir := project(t)
	first := pausedSession(t, dir)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/"), visible(fmt.Sprintf(`tr[data-id=%q]`, first)), visible(`#live[data-state="open"]`))
	eval[bool](t, ctx, `window.notReloaded = true`)
	start := time.Now()
	second := pausedSession(t, dir)
	do(t, ctx, visible(fmt.Sprintf(`tr[data-id=%q][data-status="paused"]`, second)))
	if !eval[bool](t, ctx, `window.notReloaded === true`) {
		t.Errorf("the page was reloaded")
	}
	t.Logf("the new paused session showed %s after pipeline run started", time.Since(start))
	screenshot(t, ctx, "sessions-live")
}

// A POST from the page's origin without the token (as a script that does
// not know it would send it) is refused, and the session stays paused.
func TestBrowserPostWithoutTheTokenIsRefused(t *testing.T) {
	dir := project(t)
	id := pausedSession(t, dir)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/"), visible(`body[data-loaded]`))
	answer := eval[string](t, ctx, fmt.Sprintf(`fetch("/api/sessions/%s/resume", {method: "POST", body: "{}"}).then(r => r.status + " " + r.statusText)`, id),
		chromedp.EvalAwaitPromise)
	if !strings.HasPrefix(answer, "403") {
		t.Errorf("POST without the token: %s, want 403", answer)
	}
	if status := pipeline(t, dir, 0, "status", id, "-o", "json"); !strings.Contains(status, `"status": "paused"`) {
		t.Errorf("after the refusal: %s", status)
	}
}

// Rewind from the page sets a completed session back to the phase chosen,
// and a task added shows in the working set, with a button that closes it.
func TestBrowserRewindAndAddATask(t *testing.T) {
	dir := gitProject(t)
	id := pausedSession(t, dir)
	pipeline(t, dir, 0, "resume", id)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/session/"+id),
		visible(`body[data-status="completed"]`),
		chromedp.SetValue(chromedp.CSS(`#phase-select`), "build"),
		click(`#rewind`),
		// The answer shows; the session's change may come first, by the
		// event stream.
		visible(`#result`),
		visible(`body[data-status="paused"]`))
	if phase := text(t, ctx, `#summary [data-field="phase"]`); !strings.Contains(phase, "build (2 of 2)") {
		t.Errorf("the phase after rewind to build: %q", phase)
	}
	if result := text(t, ctx, `#result`); !strings.Contains(result, "rewind") {
		t.Errorf("the result shown: %q", result)
	}
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#task`), "translate the greeting"),
		click(`#add-task`),
		visible(`ul[data-list="open tasks"] li button[data-done]`))
	if task := text(t, ctx, `ul[data-list="open tasks"] li`); !strings.Contains(task, "translate the greeting") {
		t.Errorf("the open task shown: %q", task)
	}
	screenshot(t, ctx, "session-rewound")
	if m := pipeline(t, dir, 0, "memory", id, "-o", "json"); !strings.Contains(m, "translate the greeting") {
		t.Errorf("pipeline memory after the task was added on the page: %s", m)
	}
}

// The filter by pipeline keeps that pipeline's sessions; the search box
// lists pipeline search's hits of those, each a link to its session.
func TestBrowserSessionsFilterAndSearch(t *testing.T) {
	root, demo, other := twoPipelines(t)
	url := startUI(t, root)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/"),
		visible(fmt.Sprintf(`tr[data-id=%q]`, demo)), visible(fmt.Sprintf(`tr[data-id=%q]`, other)),
		chromedp.SetValue(chromedp.CSS(`#pipeline-filter`), "other"))
	// SetValue fires no change event: the page is told as a user's choice
	// would tell it.
	eval[bool](t, ctx, `document.getElementById("pipeline-filter").dispatchEvent(new Event("change"))`)
	// The page asks the server for the pipeline's sessions.
	do(t, ctx, chromedp.WaitNotPresent(chromedp.CSS(fmt.Sprintf(`tr[data-id=%q]`, demo))))
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll("#sessions tbody tr")].map(r => r.dataset.id)`)
	if strings.Join(rows, ",") != other {
		t.Errorf("rows of pipeline other: %q, want %s only", rows, other)
	}
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`#search`), "drafting"),
		click(`#search-form button`),
		visible(`#search-results li[data-session] mark`))
	hits := eval[[]string](t, ctx, `[...document.querySelectorAll("#hits li[data-session]")].map(li => li.dataset.session)`)
	if len(hits) == 0 || strings.Join(hits, ",") != strings.Repeat(other+",", len(hits)-1)+other {
		t.Errorf("hits shown: %q, want only session %s's", hits, other)
	}
	if mark := text(t, ctx, `#hits mark`); mark != "drafting" {
		t.Errorf("the match shown: %q", mark)
	}
	screenshot(t, ctx, "sessions-search")
	do(t, ctx, click(`#hits li[data-session] a`),
		visible(`body[data-loaded] #gantt svg`))
	if shown := text(t, ctx, `#session-id`); shown != other {
		t.Errorf("the hit's link opened session %q, want %s", shown, other)
	}
}

// From a session's page, "Compare with…" opens the diff page; with the
// other session chosen, it draws both side by side.
func TestBrowserDiffDrawsBothSessions(t *testing.T) {
	dir, paused, completed := twoOutcomes(t)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/session/"+paused), visible(`body[data-loaded]`),
		click(`#diff-link`),
		chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#b option[value=%q]`, completed))),
		chromedp.SetValue(chromedp.CSS(`#b`), completed),
		click(`#pick button`),
		visible(`#diff-chart svg`))
	sides := eval[[]string](t, ctx, `[...document.querySelectorAll("#diff-chart rect.bar")].map(r => r.dataset.phase + ":" + r.dataset.side + ":" + r.classList[2])`)
	if strings.Join(sides, ",") != "design:a:paused,design:b:completed,build:a:pending,build:b:completed" {
		t.Errorf("the bars: %q, want each phase of each side with its status", sides)
	}
	if a, b := text(t, ctx, `#side-a h2`), text(t, ctx, `#side-b h2`); !strings.Contains(a, paused) || !strings.Contains(b, completed) {
		t.Errorf("the sides: %q and %q", a, b)
	}
	if div := text(t, ctx, `#divergence`); !strings.Contains(div, "Diverged at phase design") {
		t.Errorf("the divergence shown: %q", div)
	}
	screenshot(t, ctx, "diff")
}

// The analytics page draws its charts from the sessions: a bar per phase
// run, a bar per pause reason, a point per session on the cost line.
func TestBrowserAnalyticsDrawsTheCharts(t *testing.T) {
	dir, paused, completed := twoOutcomes(t)
	url := startUI(t, dir)
	ctx := browser(t)
	do(t, ctx, chromedp.Navigate(url+"/"), visible(`body[data-loaded]`),
		click(`a[href="/analytics"]`),
		visible(`#chart-cost svg circle.point`))
	for chart, want := range map[string]string{
		"chart-time":    "demo · design,demo · build",
		"chart-tokens":  "demo · design,demo · build",
		"chart-retries": "demo · design,demo · build",
		"chart-pauses":  "checkpoint",
	} {
		got := eval[[]string](t, ctx, `[...document.querySelectorAll("#`+chart+` rect.bar")].map(r => r.dataset.label)`)
		if strings.Join(got, ",") != want {
			t.Errorf("%s: bars %q, want %s", chart, got, want)
		}
	}
	if widths := eval[[]float64](t, ctx, `[...document.querySelectorAll("#chart-tokens rect.bar")].map(r => +r.getAttribute("width"))`); len(widths) != 2 || widths[0] <= widths[1] {
		t.Errorf("token bars' widths %v: design's (two sessions) should be the longer", widths)
	}
	points := eval[[]string](t, ctx, `[...document.querySelectorAll("#chart-cost circle.point")].map(c => c.dataset.session)`)
	if strings.Join(points, ",") != paused+","+completed {
		t.Errorf("cost points: %q, want %s then %s", points, paused, completed)
	}
	screenshot(t, ctx, "analytics")
}
