package main

// The dashboard's figures (issue 25): the sessions page of -ui-sessions
// sessions loads (the list rendered in the DOM of a headless Chromium),
// and a session's change reaches the open page. The sessions are made
// from two real runs, copied through the store's own API.

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/browsertest"
)

var (
	uiOnly     = flag.Bool("ui", false, "measure only the dashboard: the sessions page of -ui-sessions sessions loading in headless Chromium, and a session's change reaching the open page")
	uiSessions = flag.Int("ui-sessions", 10000, "sessions in the store for -ui")
	uiRuns     = flag.Int("ui-runs", 20, "page loads, and changes, for -ui")
	uiAgainst  = flag.String("ui-against", "", "another pipeline binary whose dashboard is measured too, its loads interleaved with this one's")
	uiStore    = flag.String("ui-store", "", "with -ui: only make the sessions, in this folder, and keep them (to look at with pipeline ui --root)")
)

// uiPhases is the project of the dashboard figures: design stops at a
// checkpoint the first time, build fails its first try and is retried.
const uiPhases = `version: 1
name: bench-ui
agent:
  kind: command
  command: [sh, ./agent.sh, "{prompt}"]
defaults:
  pause_when:
    checkpoint: checkpoint
  retry:
    when: exit_code != 0
    backoff: 10ms
phases:
  - name: design
    prompt: Design it.
  - name: build
    prompt: Build it.
  - name: review
    prompt: Review it.
`

const uiAgent = `case "$1" in
*Design*)
	if [ ! -f .checkpointed ]; then : > .checkpointed; echo "[CHECKPOINT] design drafted"; fi
	echo "designed" ;;
*Build*)
	if [ ! -f .failed ]; then : > .failed; echo "build failed" >&2; exit 1; fi
	echo "built" ;;
*) echo "reviewed" ;;
esac
`

func uiFigures(pipeline, work string) {
	dir := filepath.Join(work, "ui")
	if *uiStore != "" {
		dir = *uiStore
	}
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(uiPhases), 0o644))
	check(os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(uiAgent), 0o644))
	fmt.Printf("pipeline bench -ui: %s, %d cores, load %s\n\n", pipeline, numCPU(), loadAverage())
	start := time.Now()
	n := makeUISessions(pipeline, dir, *uiSessions)
	fmt.Printf("1. made %d sessions (2 real runs, copied through the store: 3 phases, a retry; a third paused at a checkpoint) in %s\n\n",
		n, ms(time.Since(start)))
	if *uiStore != "" {
		return
	}
	ctx, stop := uiBrowser()
	defer stop()
	servers := []uiServer{startUIServer("this", pipeline, dir)}
	if *uiAgainst != "" {
		against, err := filepath.Abs(*uiAgainst)
		check(err)
		servers = append(servers, startUIServer("against", against, dir))
	}
	uiLoadFigure(ctx, servers, n)
	uiAPIFigure(servers[0].url)
	uiChangeFigure(ctx, servers[0].url, dir)
}

type uiServer struct {
	name, url string
	pid       int
}

// makeUISessions runs the two template sessions, then copies them until
// the store holds n sessions; it returns how many it holds.
func makeUISessions(pipeline, dir string, n int) int {
	run := func(args ...string) {
		cmd := exec.Command(pipeline, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); err != nil && code != 3 {
			check(fmt.Errorf("pipeline %s: %v\n%s", strings.Join(args, " "), err, out))
		}
	}
	run("run", "--new")
	run("resume")
	os.Remove(filepath.Join(dir, ".checkpointed"))
	run("run", "--new")
	st, err := store.OpenExisting(filepath.Join(dir, ".pipeline"))
	check(err)
	defer st.Close()
	list, err := st.List()
	check(err)
	if len(list) != 2 {
		check(fmt.Errorf("the template runs made %d sessions, want 2", len(list)))
	}
	var completed, paused uiTemplate
	for _, sum := range list {
		switch sum.Status {
		case "completed":
			completed = readTemplate(st, sum)
		case "paused":
			paused = readTemplate(st, sum)
		}
	}
	if completed.sum.ID == "" || paused.sum.ID == "" {
		check(fmt.Errorf("the template runs made %+v, want a completed session and a paused one", list))
	}
	base := time.Now().Add(-time.Duration(n) * time.Minute)
	for i := range n - len(list) {
		// Three of four completed; the newest ones paused, a page of them.
		t := completed
		if i%4 == 0 || i > n-150 {
			t = paused
		}
		t.copyAs(st, base.Add(time.Duration(i)*time.Minute), i)
	}
	list, err = st.List()
	check(err)
	return len(list)
}

// uiTemplate is a session to copy: its events, snapshot and index line.
type uiTemplate struct {
	meta   store.Meta
	sum    store.Summary
	events [][2]string
	seq    int64
	state  []byte
}

func readTemplate(st *store.Store, sum store.Summary) uiTemplate {
	x, err := st.ReadSession(sum.ID)
	check(err)
	defer x.Close()
	t := uiTemplate{meta: x.Meta, sum: sum}
	check(x.Events(0, func(_ int64, typ string, payload []byte) error {
		t.events = append(t.events, [2]string{typ, string(payload)})
		return nil
	}))
	t.seq, t.state, err = x.ReadSnapshot()
	check(err)
	return t
}

// copyAs makes a copy of the template created at created.
func (t uiTemplate) copyAs(st *store.Store, created time.Time, i int) {
	meta := t.meta
	meta.ID = fmt.Sprintf("%s-%06x", strings.Replace(created.UTC().Format("20060102-150405.000"), ".", "", 1), i)
	meta.Created, meta.Name = created, ""
	x, err := st.Create(meta)
	check(err)
	var seq int64
	for _, e := range t.events {
		seq, err = x.Append(e[0], []byte(e[1]))
		check(err)
	}
	sum := t.sum
	sum.ID, sum.Created, sum.Updated = meta.ID, created, created.Add(40*time.Second)
	check(x.WriteSnapshot(seq, t.state, sum))
	check(x.Close())
}

// uiBrowser is a headless Chromium tab; stop closes the browser (see
// browsertest.Start: it leaves no folder in the temp folder).
func uiBrowser() (tab context.Context, stop func()) {
	exe, err := browsertest.Exe()
	check(err)
	b, err := browsertest.Start(exe, chromedp.WindowSize(1280, 800))
	check(err)
	return b.Tab, func() {
		if err := b.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}
}

// startUIServer runs binary's pipeline ui over dir.
func startUIServer(name, binary, dir string) uiServer {
	cmd := exec.Command(binary, "ui", "--addr", "127.0.0.1:0", "--root", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	check(err)
	check(cmd.Start())
	uiStarted = append(uiStarted, cmd)
	line, err := bufio.NewReader(out).ReadString('\n')
	url := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`).FindString(line)
	if err != nil || url == "" {
		check(fmt.Errorf("%s ui printed %q: %v", binary, line, err))
	}
	return uiServer{name: name, url: url, pid: cmd.Process.Pid}
}

// uiStarted are the dashboards the bench started, stopped at its end.
var uiStarted []*exec.Cmd

func stopUIServers() {
	for _, cmd := range uiStarted {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}

// uiAPIFigure times the requests the sessions page makes, from this
// process: a page of 100 rows, and the whole listing as GET
// /api/sessions answers it.
func uiAPIFigure(url string) {
	fmt.Printf("3. the API over them (Go's HTTP client, %d requests each)\n", *uiRuns)
	fmt.Printf("   %-34s %9s %9s %9s %s\n", "", "median", "p90", "max", "bytes")
	for _, path := range []string{"/api/list?limit=100", "/api/sessions"} {
		var took []time.Duration
		size := 0
		for range *uiRuns {
			start := time.Now()
			res, err := http.Get(url + path)
			check(err)
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			check(err)
			took, size = append(took, time.Since(start)), len(body)
		}
		s := sorted(took)
		fmt.Printf("   %-34s %9s %9s %9s %d   (load %s)\n", "GET "+path, ms(pct(s, 50)), ms(pct(s, 90)), ms(s[len(s)-1]), size, loadAverage())
	}
	fmt.Println()
}

// uiLoadFigure loads the sessions page of each server in turn, runs
// times each: the time from the navigation's start to the list rendered
// (the page's data-loaded mark, set once its rows are in the DOM), as
// the page's own clock says, and the rows it drew.
func uiLoadFigure(ctx context.Context, servers []uiServer, sessions int) {
	fmt.Printf("2. the sessions page of %d sessions: navigation start → the list rendered in the DOM (headless Chromium), %d loads each, interleaved; the first load is a server's first listing\n",
		sessions, *uiRuns)
	loads := make([][]time.Duration, len(servers))
	rows := make([]int, len(servers))
	cpu := make([]int64, len(servers))
	for i, s := range servers {
		ticks, err := cpuTicks(s.pid)
		check(err)
		cpu[i] = -ticks
	}
	for r := 0; r < *uiRuns; r++ {
		for i, s := range servers {
			// From a blank page: the last page's teardown (10,000 rows
			// of another dashboard's) is not this load's.
			check(chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(s.url+"/"),
				chromedp.WaitVisible(chromedp.CSS(`body[data-loaded] #sessions tbody tr`))))
			took, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`Number(document.body.dataset.loaded) - performance.timeOrigin`))
			check(err)
			rows[i], err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#sessions tbody tr").length`))
			check(err)
			loads[i] = append(loads[i], time.Duration(took*float64(time.Millisecond)))
		}
	}
	fmt.Printf("   %-34s %9s %9s %9s %9s %11s %s\n", "", "first", "median", "p90", "max", "server CPU", "rows drawn")
	tick := clockTick()
	for i, s := range servers {
		ticks, err := cpuTicks(s.pid)
		check(err)
		perLoad := time.Duration(cpu[i]+ticks) * tick / time.Duration(*uiRuns)
		d := loads[i]
		rest := sorted(d[1:])
		fmt.Printf("   %-34s %9s %9s %9s %9s %11s %d   (load %s)\n", s.name+" ("+s.url+")", ms(d[0]), ms(pct(rest, 50)), ms(pct(rest, 90)), ms(rest[len(rest)-1]),
			ms(perLoad)+"/load", rows[i], loadAverage())
	}
	fmt.Println()
}

// uiChangeFigure completes a paused session shown on the open page, runs
// times, and times the change from the call to complete (app.Complete,
// in this process) to its row saying completed in the DOM, as a
// MutationObserver in the page saw it.
func uiChangeFigure(ctx context.Context, url, dir string) {
	defer stopUIServers()
	fmt.Printf("4. a session's change reaching the open sessions page: app.Complete of a paused session shown → its row says completed (a MutationObserver's time), %d changes\n", *uiRuns)
	check(chromedp.Do(ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.CSS(`#live[data-state="open"]`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded] #sessions tbody tr`))))
	p := app.Pipeline{File: filepath.Join(dir, "phases.yaml"), StateDir: filepath.Join(dir, ".pipeline")}
	var took, calls []time.Duration
	for r := 0; r < *uiRuns; r++ {
		check(chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#sessions tr[data-status="paused"]`))))
		id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#sessions tr[data-status="paused"]').dataset.id`))
		check(err)
		_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`window.seen = 0; new MutationObserver((ms, o) => {
  const tr = document.querySelector('#sessions tr[data-id=%q]');
  if (tr && tr.dataset.status === "completed") { window.seen = performance.timeOrigin + performance.now(); o.disconnect(); }
}).observe(document.querySelector("#sessions tbody"), {subtree: true, childList: true, attributes: true}); true`, id)))
		check(err)
		start := time.Now()
		_, err = app.Complete(ctx, app.CompleteRequest{Pipeline: p, Session: id})
		check(err)
		calls = append(calls, time.Since(start))
		seen, err := chromedp.Run(ctx, chromedp.Poll[float64](`window.seen`, chromedp.WithPollingInterval(5*time.Millisecond)))
		check(err)
		took = append(took, time.Duration((seen-float64(start.UnixNano())/1e6)*float64(time.Millisecond)))
	}
	s, c := sorted(took), sorted(calls)
	fmt.Printf("   %-34s %9s %9s %9s\n", "", "median", "p90", "max")
	fmt.Printf("   %-34s %9s %9s %9s   (load %s)\n", "complete → the row changed", ms(pct(s, 50)), ms(pct(s, 90)), ms(s[len(s)-1]), loadAverage())
	fmt.Printf("   %-34s %9s %9s %9s\n", "of which the call to complete", ms(pct(c, 50)), ms(pct(c, 90)), ms(c[len(c)-1]))
}
