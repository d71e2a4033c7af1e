package main

// The watch figures (-watch): how soon pipeline watch starts the next step
// of a paused session after its spec is written, beside go-task's
// task --watch doing the same work, and what pipeline watch costs while
// nothing changes.
//
// The step is this program (-stamp FIFO): the first thing its main does is
// read the clock, and it sends that time, with its session and phase, down
// a FIFO the bench reads. A figure is that time minus the time read just
// before the bench wrote the file.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var (
	watchOnly = flag.Bool("watch", false, "measure only the watch figures: spec written → resumed step started (pipeline watch beside task --watch), and pipeline watch's idle cost")
	watchRuns = flag.Int("watch-runs", 100, "spec writes per row of the watch latency figure; the new-folder rows take a fifth")
	watchIdle = flag.Duration("watch-idle", 60*time.Second, "how long pipeline watch idles over 100 paused sessions for the idle figure")
	stampFIFO = flag.String("stamp", "", "internal: send this process's start time, session and phase down this FIFO")
)

const (
	// taskVersion is the go-task built for the comparison.
	taskVersion = "v3.54.0"
	// watchCap is how long a write may go unanswered before it counts as
	// missed.
	watchCap = 10 * time.Second
	// maxMisses ends a row early (see giveUp).
	maxMisses = 3
	// idleSessions is the number of paused sessions of the idle figure.
	idleSessions = 100
)

// stampChild sends start (the time its main began), the session and the
// phase down fifo in one write. The FIFO is opened without blocking: when
// the bench is gone there is no reader, and the step fails instead of
// hanging.
func stampChild(fifo string, start time.Time) {
	f, err := os.OpenFile(fifo, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
	if err != nil {
		os.Exit(1)
	}
	line := fmt.Sprintf("%d %s %s\n", start.UnixNano(), orDash(os.Getenv("PIPELINE_SESSION")), orDash(os.Getenv("PIPELINE_PHASE")))
	if _, err := f.WriteString(line); err != nil {
		os.Exit(1)
	}
	f.Close()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type stamp struct {
	at      time.Time
	session string // "-" outside pipeline
	phase   string
}

// stamps reads the stamps that steps send down a FIFO. The bench holds it
// open for writing too, so that it never reads end-of-file between steps.
type stamps struct {
	c chan stamp
	f *os.File
}

func openStamps(path string) (*stamps, error) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("mkfifo %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	s := &stamps{c: make(chan stamp, 1024), f: f}
	go func() {
		scan := bufio.NewScanner(f)
		for scan.Scan() {
			fields := strings.Fields(scan.Text())
			if len(fields) != 3 {
				continue
			}
			n, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				continue
			}
			s.c <- stamp{at: time.Unix(0, n), session: fields[1], phase: fields[2]}
		}
	}()
	return s, nil
}

func (s *stamps) close() { s.f.Close() }

// drain drops the stamps already sent, and says how many there were.
func (s *stamps) drain() int {
	n := 0
	for {
		select {
		case <-s.c:
			n++
		default:
			return n
		}
	}
}

// groups are the process groups of the long-lived processes the watch
// figures start (the watchers, task): each is stopped at the end of its
// row, and all are killed whatever happens when the bench ends early.
var groups = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

func killGroups() {
	groups.Lock()
	defer groups.Unlock()
	for pid := range groups.pids {
		syscall.Kill(-pid, syscall.SIGKILL)
		delete(groups.pids, pid)
	}
}

// background is a watcher started in a process group of its own, its
// output read line by line.
type background struct {
	cmd     *exec.Cmd
	stdout  chan string
	stderr  chan string // dropped when nobody reads them
	exited  chan struct{}
	waitErr error

	mu   sync.Mutex
	tail []string // the last lines of stderr, for an error message
}

func startBackground(dir string, args ...string) (*background, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CI=true", "NO_COLOR=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	groups.Lock()
	groups.pids[cmd.Process.Pid] = true
	groups.Unlock()
	b := &background{cmd: cmd, stdout: make(chan string, 1<<16), stderr: make(chan string, 1<<12), exited: make(chan struct{})}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		scan := bufio.NewScanner(stdout)
		scan.Buffer(make([]byte, 64<<10), 1<<20)
		for scan.Scan() {
			b.stdout <- scan.Text()
		}
	}()
	go func() {
		defer readers.Done()
		scan := bufio.NewScanner(stderr)
		scan.Buffer(make([]byte, 64<<10), 1<<20)
		for scan.Scan() {
			line := scan.Text()
			b.mu.Lock()
			b.tail = append(b.tail, line)
			if len(b.tail) > 8 {
				b.tail = b.tail[1:]
			}
			b.mu.Unlock()
			select {
			case b.stderr <- line:
			default:
			}
		}
	}()
	go func() {
		readers.Wait()
		b.waitErr = cmd.Wait()
		close(b.exited)
	}()
	return b, nil
}

func (b *background) pid() int { return b.cmd.Process.Pid }

// died describes how the process ended, with the end of its stderr.
func (b *background) died() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Errorf("%s exited (%v): %s", filepath.Base(b.cmd.Path), b.waitErr, strings.Join(b.tail, " | "))
}

// stop interrupts the process (what a user's Ctrl+C does), kills its group
// after grace, and returns its exit code.
func (b *background) stop(grace time.Duration) int {
	pid := b.pid()
	syscall.Kill(-pid, syscall.SIGINT)
	select {
	case <-b.exited:
	case <-time.After(grace):
		syscall.Kill(-pid, syscall.SIGKILL)
		<-b.exited
	}
	syscall.Kill(-pid, syscall.SIGKILL) // anything it left in its group
	groups.Lock()
	delete(groups.pids, pid)
	groups.Unlock()
	return b.cmd.ProcessState.ExitCode()
}

// watchEvent is a line of pipeline watch -o json.
type watchEvent struct {
	Time    time.Time `json:"time"`
	Event   string    `json:"event"`
	File    string    `json:"file"`
	Change  string    `json:"change"`
	Session string    `json:"session"`
	Reason  string    `json:"reason"`
}

func parseEvent(line string) (watchEvent, bool) {
	var e watchEvent
	if err := json.Unmarshal([]byte(line), &e); err != nil || e.Event == "" {
		return e, false
	}
	return e, true
}

// row is one line of the latency figure.
type row struct {
	label  string
	first  []time.Duration // write → the first resumed step's start
	last   []time.Duration // write → the last one's, when a write resumes several
	runs   int
	writes int // made: a row stops after maxMisses
	missed int
	extra  int // resumes (pipeline) or runs (task) beyond one per session and write
	// skipped counts pipeline watch's "skipped" events by reason.
	skipped map[string]int
	// Where the time goes, from pipeline watch's own event times: write →
	// "changed", "changed" → "resumed", "resumed" → the step's start.
	detect, resume, spawn []time.Duration
	// rewrite: after a miss, the same file written again once the watcher
	// had time to rescan; write → step start.
	rewrite       []time.Duration
	rewriteMissed int
	target        time.Duration // of p99; 0: none
	err           error
	notes         []string
}

// writer writes the file of run i and returns the time read just before.
type writer func(i int) (time.Time, error)

func writeInPlace(path string) writer {
	return func(i int) (time.Time, error) {
		t0 := time.Now()
		return t0, os.WriteFile(path, specText(i), 0o644)
	}
}

// writeRenamed saves as many editors and tools do: a temporary file beside
// the target, renamed over it.
func writeRenamed(path string) writer {
	return func(i int) (time.Time, error) {
		t0 := time.Now()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, specText(i), 0o644); err != nil {
			return t0, err
		}
		return t0, os.Rename(tmp, path)
	}
}

// writeInNewFolder makes a folder under parent, then writes a spec in it;
// the time is read before the folder is made.
func writeInNewFolder(parent string) writer {
	return func(i int) (time.Time, error) {
		dir := filepath.Join(parent, fmt.Sprintf("new-%03d", i))
		t0 := time.Now()
		if err := os.Mkdir(dir, 0o755); err != nil {
			return t0, err
		}
		return t0, os.WriteFile(filepath.Join(dir, "README.md"), specText(i), 0o644)
	}
}

func specText(i int) []byte {
	return []byte(fmt.Sprintf("# A spec\n\nRevision %d, written at %s.\n", i, time.Now().Format(time.RFC3339Nano)))
}

func watchFigures(pipeline, self, work string) {
	// The watchers run in process groups of their own, out of reach of the
	// terminal's Ctrl+C: an interrupted bench kills them itself.
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-interrupted
		killGroups()
		os.RemoveAll(work)
		os.Exit(130)
	}()
	defer killGroups()

	fmt.Printf("pipeline bench -watch: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	fmt.Printf("load average at the start: %s (other work on the machine widens the tails)\n\n", loadAverage())
	runs := max(*watchRuns, 1)
	newRuns := max(runs/5, 1)
	noWatch := probeWatch(pipeline)

	fmt.Printf("4. watch latency: a spec written → the resumed step's process started, %d writes a row (a new folder: %d)\n", runs, newRuns)
	fmt.Printf("   a write unanswered in %v is missed; extra: resumes (task: runs) beyond one per session and write\n", watchCap)
	fmt.Printf("   pipeline: sessions of a %d-phase pipeline, each phase one step and auto_advance: false, %d writes a session;\n", sessionPhases, writesPerSession)
	fmt.Printf("   the new folder: 2 paused sessions of a pipeline with watch: [\"specs/**/*.md\"], their specs outside it\n")
	fmt.Printf("   %-45s %9s %9s %9s %7s %6s   %s\n", "", "p50", "p99", "max", "missed", "extra", "target (p99)")
	for _, debounce := range []time.Duration{0, 200 * time.Millisecond} {
		title := "pipeline watch --debounce 0"
		if debounce != 0 {
			title = "pipeline watch (default debounce, 200ms)"
		}
		fmt.Printf("   %s\n", title)
		if noWatch != nil {
			fmt.Printf("     not measured: %v\n", noWatch)
			continue
		}
		for _, r := range pipelineRows(pipeline, self, work, debounce, runs, newRuns) {
			printRow(r)
		}
	}
	task, how, err := ensureTask()
	if err == nil {
		fmt.Printf("   go-task %s (%s), sources: [\"specs/**/*.md\"]\n", taskVersion, how)
	}
	for _, interval := range []time.Duration{time.Nanosecond, 200 * time.Millisecond} {
		title := fmt.Sprintf("task --watch --interval %v", interval)
		if interval == time.Nanosecond {
			title += " (its least: 0 means its default, 100ms)"
		}
		fmt.Printf("   %s\n", title)
		if err != nil {
			fmt.Printf("     not measured: %v\n", err)
			continue
		}
		for _, r := range taskRows(task, self, work, interval, runs, newRuns) {
			printRow(r)
		}
	}
	fmt.Printf("   load average now: %s\n\n", loadAverage())

	fmt.Printf("5. idle: pipeline watch over %d paused sessions, %v without a change\n", idleSessions, *watchIdle)
	if noWatch != nil {
		fmt.Printf("   not measured: %v\n", noWatch)
		return
	}
	if err := idle(pipeline, work, *watchIdle); err != nil {
		fmt.Printf("   not measured: %v\n", err)
	}
}

// probeWatch says why pipeline cannot be measured, or nil.
func probeWatch(pipeline string) error {
	out, err := exec.Command(pipeline, "watch", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "watch") {
		return fmt.Errorf("%s has no watch command (%s)", pipeline, firstLine(out, err))
	}
	return nil
}

func firstLine(out []byte, err error) string {
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" && err != nil {
		return err.Error()
	}
	return line
}

func printRow(r row) {
	label := "     " + r.label
	switch {
	case r.err != nil:
		fmt.Printf("%-50s not measured: %v\n", label, r.err)
	case len(r.first) == 0:
		fmt.Printf("%-50s missed (> %v) in %d of %d writes\n", label, watchCap, r.missed, r.writes)
	default:
		target := ""
		if r.target > 0 {
			verdict := "met"
			if pct(sorted(r.first), 99) >= r.target {
				verdict = "NOT met"
			}
			target = fmt.Sprintf("under %s: %s", ms(r.target), verdict)
		}
		printDurations(label, r.first, fmt.Sprintf("%7d %6d   %s", r.missed, r.extra, target))
		if len(r.last) > 0 {
			printDurations("       the last of the sessions it resumed", r.last, "")
		}
	}
	if len(r.detect) > 0 {
		fmt.Printf("       where the time goes, p50 (p99): write → \"changed\" %s (%s), → \"resumed\" %s (%s), → step started %s (%s)\n",
			ms(pct(sorted(r.detect), 50)), ms(pct(sorted(r.detect), 99)),
			ms(pct(sorted(r.resume), 50)), ms(pct(sorted(r.resume), 99)),
			ms(pct(sorted(r.spawn), 50)), ms(pct(sorted(r.spawn), 99)))
	}
	if len(r.skipped) > 0 {
		var reasons []string
		for reason, n := range r.skipped {
			reasons = append(reasons, fmt.Sprintf("%d %q", n, reason))
		}
		sort.Strings(reasons)
		fmt.Printf("       \"skipped\" events, by reason: %s\n", strings.Join(reasons, ", "))
	}
	if len(r.rewrite) > 0 || r.rewriteMissed > 0 {
		line := fmt.Sprintf("       the same file written again %v later: seen in %d of %d", watchCap, len(r.rewrite), len(r.rewrite)+r.rewriteMissed)
		if len(r.rewrite) > 0 {
			line += fmt.Sprintf(", p50 %s", ms(pct(sorted(r.rewrite), 50)))
		}
		fmt.Println(line)
	}
	for _, n := range r.notes {
		fmt.Printf("       %s\n", n)
	}
}

func printDurations(label string, d []time.Duration, rest string) {
	s := sorted(d)
	fmt.Printf("%-50s %9s %9s %9s %s\n", label, ms(pct(s, 50)), ms(pct(s, 99)), ms(s[len(s)-1]), rest)
}

func sorted(d []time.Duration) []time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s
}

// ms prints a duration in milliseconds (seconds past 10 s).
func ms(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2f ms", float64(d)/1e6)
}

// The sessions of the latency figure run a pipeline of sessionPhases
// phases, each one step that pauses when done (auto_advance: false), so
// that a resume runs one step: a spec gets writesPerSession writes, then
// the row goes on with the next session. The time from a change to the
// resume grows with the number of phases; these stay few, as in a real
// pipeline.
const (
	sessionPhases    = 12
	writesPerSession = 9 // the phases left are room for extra resumes
)

// pipelineYAML writes a pipeline of phases that pause when done; glob adds
// a watch: glob over specs/.
func pipelineYAML(name, step string, phases int, glob bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: %s\n", name)
	if glob {
		b.WriteString("watch: [\"specs/**/*.md\"]\n")
	}
	b.WriteString("phases:\n")
	for i := 1; i <= phases; i++ {
		fmt.Fprintf(&b, "  - name: p%03d\n    auto_advance: false\n    steps: [{run: %q}]\n", i, step)
	}
	return b.String()
}

// runPaused runs a new session of spec to its first pause (exit 3).
func runPaused(pipeline, file, spec string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pipeline, "run", "--spec", spec, file)
	cmd.Dir = filepath.Dir(file) // spec is relative to it
	cmd.Env = append(os.Environ(), "CI=true")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 {
		return fmt.Errorf("pipeline run --spec %s: want a pause (exit 3), got %v: %s", spec, err, lastLine(out))
	}
	return nil
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// validate says why pipeline refuses file, or nil.
func validate(pipeline, file string) error {
	out, err := exec.Command(pipeline, "validate", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pipeline validate refuses the watch: key (%s)", strings.TrimPrefix(firstLine(out, err), file+":"))
	}
	return nil
}

// startWatch starts pipeline watch -o json in dir and waits for "ready".
func startWatch(pipeline, dir string, args ...string) (*background, time.Duration, error) {
	t0 := time.Now()
	w, err := startBackground(dir, append([]string{pipeline, "watch", "-o", "json"}, args...)...)
	if err != nil {
		return nil, 0, err
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line := <-w.stdout:
			if e, ok := parseEvent(line); ok && e.Event == "ready" {
				return w, time.Since(t0), nil
			}
		case <-w.exited:
			return nil, 0, w.died()
		case <-deadline:
			w.stop(5 * time.Second)
			return nil, 0, fmt.Errorf("no \"ready\" event in 30s")
		}
	}
}

func pipelineRows(pipeline, self, work string, debounce time.Duration, runs, newRuns int) []row {
	labels := []string{"spec written in place", "spec saved as editors do (temp + rename)", "new folder, a spec in it (resumes 2 sessions)"}
	fail := func(err error) []row {
		rows := make([]row, len(labels))
		for i := range rows {
			rows[i] = row{label: labels[i], err: err}
		}
		return rows
	}
	dir := filepath.Join(work, fmt.Sprintf("watch-%v", debounce))
	// written: sessions whose own spec is written, no glob; folders: two
	// sessions whose specs lie outside the glob over specs/, so that a new
	// file there resumes both and a write to a spec only its session.
	written, folders := filepath.Join(dir, "written"), filepath.Join(dir, "folders")
	for _, d := range []string{written, filepath.Join(folders, "specs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fail(err)
		}
	}
	st, err := openStamps(filepath.Join(dir, "stamps"))
	if err != nil {
		return fail(err)
	}
	defer st.close()
	step := fmt.Sprintf("%s -stamp %s", self, filepath.Join(dir, "stamps"))
	writtenFile, foldersFile := filepath.Join(written, "phases.yaml"), filepath.Join(folders, "phases.yaml")
	if err := os.WriteFile(writtenFile, []byte(pipelineYAML("written", step, sessionPhases, false)), 0o644); err != nil {
		return fail(err)
	}
	if err := os.WriteFile(foldersFile, []byte(pipelineYAML("folders", step, newRuns+5, true)), 0o644); err != nil {
		return fail(err)
	}
	noGlob := validate(pipeline, foldersFile)
	session := func(file, spec string) (string, error) {
		if err := os.WriteFile(filepath.Join(filepath.Dir(file), spec), specText(0), 0o644); err != nil {
			return "", err
		}
		if err := runPaused(pipeline, file, spec); err != nil {
			return "", err
		}
		select {
		case s := <-st.c:
			return s.session, nil
		case <-time.After(5 * time.Second):
			return "", fmt.Errorf("the first step of %s sent no stamp", spec)
		}
	}
	inPlace, renamed := map[int]string{}, map[int]string{}
	for g := 0; g*writesPerSession < runs; g++ {
		for name, sessions := range map[string]map[int]string{"in-place": inPlace, "renamed": renamed} {
			id, err := session(writtenFile, fmt.Sprintf("%s-%02d.md", name, g))
			if err != nil {
				return fail(err)
			}
			sessions[g] = id
		}
	}
	args := []string{writtenFile}
	var both []string
	if noGlob == nil {
		args = append(args, foldersFile)
		for _, spec := range []string{"a.md", "b.md"} {
			id, err := session(foldersFile, spec)
			if err != nil {
				return fail(err)
			}
			both = append(both, id)
		}
	}
	if debounce == 0 {
		args = append(args, "--debounce", "0")
	}
	w, _, err := startWatch(pipeline, dir, args...)
	if err != nil {
		return fail(err)
	}
	// rotate writes the spec of the session in turn, with mk.
	rotate := func(name string, sessions map[int]string, mk func(string) writer) func(int) (writer, []string) {
		return func(i int) (writer, []string) {
			g := (i - 1) / writesPerSession
			return mk(filepath.Join(written, fmt.Sprintf("%s-%02d.md", name, g))), []string{sessions[g]}
		}
	}
	rows := []row{
		measurePipeline(w, st, rotate("in-place", inPlace, writeInPlace), runs, debounce),
		measurePipeline(w, st, rotate("renamed", renamed, writeRenamed), runs, debounce),
		{err: noGlob},
	}
	if noGlob == nil {
		newFolder := writeInNewFolder(filepath.Join(folders, "specs"))
		rows[2] = measurePipeline(w, st, func(int) (writer, []string) { return newFolder, both }, newRuns, debounce)
	}
	for i := range rows {
		rows[i].label, rows[i].target = labels[i], 10*time.Millisecond+debounce
	}
	if code := w.stop(10 * time.Second); code != 3 {
		rows[len(rows)-1].notes = append(rows[len(rows)-1].notes, fmt.Sprintf("pipeline watch exited %d on SIGINT, not 3", code))
	}
	return rows
}

// measurePipeline writes runs times, with the writer aim gives for each
// write; each write should resume exactly the sessions aim names, whose
// steps then start and pause again.
func measurePipeline(w *background, st *stamps, aim func(i int) (writer, []string), runs int, debounce time.Duration) (r row) {
	r = row{runs: runs, skipped: map[string]int{}}
	// events takes in what pipeline watch printed outside the wait of a
	// write: resumes there are extra.
	events := func(e watchEvent) {
		switch e.Event {
		case "resumed":
			r.extra++
		case "skipped":
			r.skipped[e.Reason]++
		}
	}
	misses := 0
	defer stoppedEarly(&r, &misses)
	for i := 1; i <= runs && !giveUp(misses, r.writes); i++ {
		r.writes++
		drainEvents(w, events)
		st.drain()
		write, expect := aim(i)
		expected := map[string]bool{}
		for _, s := range expect {
			expected[s] = true
		}
		t0, err := write(i)
		if err != nil {
			r.err = err
			return r
		}
		started := map[string]time.Time{}
		paused := map[string]bool{}
		resumedAt := map[string]time.Time{}
		var changedAt time.Time
		deadline := time.NewTimer(watchCap)
	wait:
		for len(paused) < len(expect) || len(started) < len(expect) {
			select {
			case s := <-st.c:
				if s.at.Before(t0) || !expected[s.session] {
					continue // the step of an extra resume, counted by its event
				}
				if _, ok := started[s.session]; !ok {
					started[s.session] = s.at
				}
			case line := <-w.stdout:
				e, ok := parseEvent(line)
				if !ok {
					continue
				}
				switch e.Event {
				case "changed":
					if changedAt.IsZero() {
						changedAt = e.Time
					}
				case "resumed":
					if !expected[e.Session] || !resumedAt[e.Session].IsZero() {
						r.extra++
						continue
					}
					resumedAt[e.Session] = e.Time
				case "paused", "completed":
					if !resumedAt[e.Session].IsZero() {
						paused[e.Session] = true
					}
				case "skipped":
					r.skipped[e.Reason]++
				}
			case <-w.exited:
				r.err = w.died()
				return r
			case <-deadline.C:
				break wait
			}
		}
		deadline.Stop()
		if len(started) < len(expect) {
			r.missed++
			misses++
			r.notes = append(r.notes, fmt.Sprintf("write %d: %d of %d sessions' steps started in %v", i, len(started), len(expect), watchCap))
			continue
		}
		var first, last time.Time
		for _, at := range started {
			if first.IsZero() || at.Before(first) {
				first = at
			}
			last = later(last, at)
		}
		r.first = append(r.first, first.Sub(t0))
		if len(expect) > 1 {
			r.last = append(r.last, last.Sub(t0))
		}
		if s := expect[0]; !changedAt.IsZero() && !resumedAt[s].IsZero() {
			r.detect = append(r.detect, changedAt.Sub(t0))
			r.resume = append(r.resume, resumedAt[s].Sub(changedAt))
			r.spawn = append(r.spawn, started[s].Sub(resumedAt[s]))
		}
	}
	// A burst reported twice comes a debounce or so after the first report.
	settle(w, debounce+500*time.Millisecond, events)
	st.drain()
	return r
}

// giveUp ends a row once its answer is known: every write so far missed,
// or maxMisses did.
func giveUp(misses, writes int) bool {
	return misses >= maxMisses || (misses >= 2 && misses == writes)
}

func stoppedEarly(r *row, misses *int) {
	if r.writes < r.runs && giveUp(*misses, r.writes) {
		r.notes = append(r.notes, fmt.Sprintf("stopped after %d misses, at write %d of %d", *misses, r.writes, r.runs))
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func drainEvents(w *background, take func(watchEvent)) {
	for {
		select {
		case line := <-w.stdout:
			if e, ok := parseEvent(line); ok {
				take(e)
			}
		default:
			return
		}
	}
}

// settle takes in what w prints for d.
func settle(w *background, d time.Duration, take func(watchEvent)) {
	end := time.After(d)
	for {
		select {
		case line := <-w.stdout:
			if e, ok := parseEvent(line); ok {
				take(e)
			}
		case <-w.exited:
			return
		case <-end:
			return
		}
	}
}

// ensureTask returns go-task's binary, built once into the project's
// .cache/bin (gitignored), and how it came.
func ensureTask() (string, string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		return "", "", fmt.Errorf("run from the project: no go.mod found (%v)", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	bin := filepath.Join(root, ".cache", "bin")
	task := filepath.Join(bin, "task")
	want := strings.TrimPrefix(taskVersion, "v")
	if out, err := exec.Command(task, "--version").Output(); err == nil && strings.Contains(string(out), want) {
		return task, "reused from .cache/bin", nil
	}
	ignored := exec.Command("git", "-C", root, "check-ignore", "-q", task)
	if err := ignored.Run(); err != nil {
		return "", "", fmt.Errorf("%s is not gitignored: not building go-task there", bin)
	}
	fmt.Printf("   (building go-task %s into .cache/bin, once)\n", taskVersion)
	install := exec.Command("go", "install", "github.com/go-task/task/v3/cmd/task@"+taskVersion)
	install.Env = append(os.Environ(), "GOBIN="+bin)
	if out, err := install.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("go install go-task %s: %v: %s", taskVersion, err, lastLine(out))
	}
	return task, "built into .cache/bin", nil
}

const taskfileYAML = `version: '3'
tasks:
  stamp:
    sources: ["specs/**/*.md"]
    cmds: [%q]
`

func taskRows(task, self, work string, interval time.Duration, runs, newRuns int) []row {
	labels := []string{"spec written in place", "spec saved as editors do (temp + rename)", "new folder, a spec in it"}
	fail := func(err error) []row {
		rows := make([]row, len(labels))
		for i := range rows {
			rows[i] = row{label: labels[i], err: err}
		}
		return rows
	}
	dir := filepath.Join(work, fmt.Sprintf("task-%v", interval))
	if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
		return fail(err)
	}
	st, err := openStamps(filepath.Join(dir, "stamps"))
	if err != nil {
		return fail(err)
	}
	defer st.close()
	step := fmt.Sprintf("%s -stamp %s", self, filepath.Join(dir, "stamps"))
	if err := os.WriteFile(filepath.Join(dir, "Taskfile.yml"), []byte(fmt.Sprintf(taskfileYAML, step)), 0o644); err != nil {
		return fail(err)
	}
	spec := filepath.Join(dir, "specs", "main.md")
	if err := os.WriteFile(spec, specText(0), 0o644); err != nil {
		return fail(err)
	}
	// --verbose: task says on stdout when it watches a folder, which is
	// when it is ready. It runs the task once first.
	t, err := startBackground(dir, task, "--watch", "--verbose", "--interval", interval.String(), "stamp")
	if err != nil {
		return fail(err)
	}
	defer t.stop(5 * time.Second)
	ready, ran := false, false
	deadline := time.After(30 * time.Second)
	for !ready || !ran {
		select {
		case line := <-t.stdout:
			ready = ready || strings.Contains(line, "watching new dir")
		case <-st.c:
			ran = true
		case <-t.exited:
			return fail(t.died())
		case <-deadline:
			return fail(fmt.Errorf("task --watch: not watching and run in 30s"))
		}
	}
	waitFinished(t, 2*time.Second)
	rows := []row{
		measureTask(t, st, writeInPlace(spec), runs, nil),
		measureTask(t, st, writeRenamed(spec), runs, nil),
		measureTask(t, st, writeInNewFolder(filepath.Join(dir, "specs")), newRuns, func(i int) writer {
			return writeInPlace(filepath.Join(dir, "specs", fmt.Sprintf("new-%03d", i), "README.md"))
		}),
	}
	for i := range rows {
		rows[i].label = labels[i]
	}
	return rows
}

// waitFinished waits until task says the run is over (it cancels a run
// when a change comes during it).
func waitFinished(t *background, d time.Duration) {
	end := time.After(d)
	for {
		select {
		case line := <-t.stderr:
			if strings.Contains(line, "finished running") || strings.Contains(line, "up to date") {
				return
			}
		case <-t.exited:
			return
		case <-end:
			return
		}
	}
}

// takeLines drains c and returns the last n lines.
func takeLines(c chan string, n int) []string {
	var lines []string
	for {
		select {
		case line := <-c:
			lines = append(lines, line)
			if len(lines) > n {
				lines = lines[1:]
			}
		default:
			return lines
		}
	}
}

func drainLines(c chan string) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// measureTask writes runs times with write; after a miss, rewrite (when
// set) writes the same file again, once task had time to rescan.
func measureTask(t *background, st *stamps, write writer, runs int, rewrite func(i int) writer) (r row) {
	r = row{runs: runs}
	misses := 0
	defer stoppedEarly(&r, &misses)
	for i := 1; i <= runs && !giveUp(misses, r.writes); i++ {
		r.writes++
		r.extra += st.drain()
		drainLines(t.stdout)
		drainLines(t.stderr)
		t0, err := write(i)
		if err != nil {
			r.err = err
			return r
		}
		d, ok, err := awaitStamp(t, st, t0, &r.extra)
		if err != nil {
			r.err = err
			return r
		}
		if !ok {
			r.missed++
			misses++
			if misses == 1 {
				said := strings.Join(takeLines(t.stderr, 6), " | ")
				said = strings.ReplaceAll(said, t.cmd.Dir+"/", "")
				said = strings.Join(strings.Fields(said), " ")
				r.notes = append(r.notes, fmt.Sprintf("write %d missed; task printed: %s", i, said))
			}
			if rewrite != nil {
				t0, err := rewrite(i)(i + 1000)
				if err != nil {
					r.err = err
					return r
				}
				d, ok, err := awaitStamp(t, st, t0, &r.extra)
				switch {
				case err != nil:
					r.err = err
					return r
				case ok:
					r.rewrite = append(r.rewrite, d)
					waitFinished(t, 2*time.Second)
				default:
					r.rewriteMissed++
				}
			}
			continue
		}
		r.first = append(r.first, d)
		waitFinished(t, 2*time.Second)
	}
	time.Sleep(500 * time.Millisecond)
	r.extra += st.drain()
	return r
}

// awaitStamp waits up to watchCap for a step started after t0; a step
// started before is an extra run of an earlier write.
func awaitStamp(t *background, st *stamps, t0 time.Time, extra *int) (time.Duration, bool, error) {
	deadline := time.NewTimer(watchCap)
	defer deadline.Stop()
	for {
		select {
		case s := <-st.c:
			if s.at.Before(t0) {
				*extra++
				continue
			}
			return s.at.Sub(t0), true, nil
		case <-t.exited:
			return 0, false, t.died()
		case <-deadline.C:
			return 0, false, nil
		}
	}
}

const idleYAML = `version: 1
name: idle
watch: ["specs/**/*.md"]
phases:
  - name: first
    auto_advance: false
    steps: [{run: "true"}]
  - name: second
    steps: [{run: "true"}]
`

// idle measures pipeline watch over many paused sessions while nothing
// changes: CPU time and memory, from /proc.
func idle(pipeline, work string, d time.Duration) error {
	dir := filepath.Join(work, "idle")
	if err := os.MkdirAll(filepath.Join(dir, "specs"), 0o755); err != nil {
		return err
	}
	file := filepath.Join(dir, "phases.yaml")
	if err := os.WriteFile(file, []byte(idleYAML), 0o644); err != nil {
		return err
	}
	if err := validate(pipeline, file); err != nil {
		fmt.Printf("   without the watch: glob: %v\n", err)
		yaml := strings.Replace(idleYAML, "watch: [\"specs/**/*.md\"]\n", "", 1)
		if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
			return err
		}
	}
	for i := 1; i <= idleSessions; i++ {
		spec := filepath.Join("specs", fmt.Sprintf("%03d.md", i))
		if err := os.WriteFile(filepath.Join(dir, spec), specText(i), 0o644); err != nil {
			return err
		}
		if err := runPaused(pipeline, file, spec); err != nil {
			return err
		}
	}
	w, took, err := startWatch(pipeline, dir, file)
	if err != nil {
		return err
	}
	defer w.stop(10 * time.Second)
	tick := clockTick()
	setup, err := cpuTicks(w.pid())
	if err != nil {
		return err
	}
	events := 0
	settle(w, d, func(watchEvent) { events++ })
	select {
	case <-w.exited:
		return w.died()
	default:
	}
	end, err := cpuTicks(w.pid())
	if err != nil {
		return err
	}
	rss, hwm, err := memory(w.pid())
	if err != nil {
		return err
	}
	used := time.Duration(end-setup) * tick
	fmt.Printf("   ready after             %s (%s of CPU to set up)\n", ms(took), ms(time.Duration(setup)*tick))
	fmt.Printf("   CPU while idle          %.2f %% of a core (%s in %v; the clock counts in %s)   target: under 1 %%\n",
		100*used.Seconds()/d.Seconds(), ms(used), d, ms(tick))
	fmt.Printf("   memory                  VmRSS %.1f MB, VmHWM %.1f MB   target: under 50 MB\n", float64(rss)/1e6, float64(hwm)/1e6)
	if n, err := inotifyWatches(w.pid()); err == nil {
		fmt.Printf("   inotify watches         %d\n", n)
	}
	fmt.Printf("   events while idle       %d\n", events)
	if code := w.stop(10 * time.Second); code != 3 {
		fmt.Printf("   pipeline watch exited %d on SIGINT, not 3\n", code)
	}
	return nil
}

// loadAverage is the first three fields of /proc/loadavg, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if fields := strings.Fields(string(b)); err == nil && len(fields) >= 3 {
		return strings.Join(fields[:3], " ")
	}
	return "unknown"
}

// clockTick is the unit of utime and stime in /proc/PID/stat.
func clockTick() time.Duration {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if n, perr := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && perr == nil && n > 0 {
		return time.Second / time.Duration(n)
	}
	return 10 * time.Millisecond
}

// cpuTicks is utime+stime of pid, in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// the last ')'. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, errors.New("cannot read /proc/PID/stat")
	}
	u, err1 := strconv.ParseInt(fields[11], 10, 64)
	s, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("cannot read utime and stime in /proc/PID/stat")
	}
	return u + s, nil
}

// memory is VmRSS and VmHWM of pid, in bytes.
func memory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, nil
}

// inotifyWatches counts the watches of pid's inotify instances.
func inotifyWatches(pid int) (int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || !strings.Contains(target, "inotify") {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		if err != nil {
			return 0, err
		}
		n += strings.Count(string(info), "inotify wd:")
	}
	return n, nil
}
