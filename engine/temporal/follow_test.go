//go:build temporal

package temporal_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/temporal"
	"github.com/pipeline-dev/pipeline/internal/temporaltest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// TestFollowOutput follows fleet sessions whose one step runs on a real
// worker (in this process) against a real dev server, shared by the
// subtests.
func TestFollowOutput(t *testing.T) {
	s := temporaltest.StartDevServer(t)
	t.Run("lines over time arrive once, in order, then the end", func(t *testing.T) { followLinesOverTime(t, s) })
	t.Run("more than the buffer between looks is skipped, said, and the rest in order", func(t *testing.T) { followPastTheBuffer(t, s) })
	t.Run("the heartbeat of a step printing megabytes stays bounded", func(t *testing.T) { heartbeatBounded(t, s) })
	t.Run("the follow ends when the session pauses", func(t *testing.T) { followUntilPaused(t, s) })
	t.Run("a pause stops the step, and the follow ends with its stopped end", func(t *testing.T) { followThroughAPause(t, s) })
	t.Run("the follow waits out a server restart", followAcrossRestart)
	t.Run("a session that is not there", func(t *testing.T) {
		f := startFleet(t, s)
		err := f.client.FollowOutput(context.Background(), "no-such-session", &watched{})
		if !errors.Is(err, temporal.ErrNoSession) {
			t.Fatalf("want ErrNoSession, got %v", err)
		}
	})
}

// fleet is a worker serving a task queue of its own, and a client of it.
type fleet struct {
	client *temporal.Client
}

func startFleet(t *testing.T, s *temporaltest.DevServer) *fleet {
	t.Helper()
	target := temporal.Target{Address: s.HostPort(), TaskQueue: "q-" + strconv.FormatInt(time.Now().UnixNano(), 36)}.WithDefaults()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	c, err := temporal.Dial(ctx, target, temporal.QuietLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	activities := &temporal.Activities{StateDir: t.TempDir(), Grace: time.Second}
	w := worker.New(c, target.TaskQueue, temporal.WorkerOptions(activities, worker.Options{}))
	w.RegisterWorkflowWithOptions(temporal.SessionWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowType})
	w.RegisterActivity(activities)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return &fleet{client: &temporal.Client{C: c, Target: target}}
}

// session starts a session of yamlText on the fleet; it returns its id
// and the folder its steps run in.
func (f *fleet) session(t *testing.T, yamlText string) (id, dir string) {
	t.Helper()
	src := sourceIn(t, yamlText)
	now := time.Now()
	id = session.NewSessionID(now)
	in := temporal.SessionInput{SessionID: id, Plan: src, Created: now,
		Events: []temporal.EventRecord{temporal.MustRecord(engine.Started{At: now})}}
	if err := f.client.Start(context.Background(), in, temporal.Memo{File: src.File, Key: temporal.Key(src.File, "")}); err != nil {
		t.Fatal(err)
	}
	return id, filepath.Dir(src.File)
}

// follow runs FollowOutput on session id into a watched writer; the
// channel gets what it returned.
func (f *fleet) follow(t *testing.T, id string) (*watched, <-chan error) {
	out := &watched{changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done, returned := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(returned)
		done <- f.client.FollowOutput(ctx, id, out)
	}()
	t.Cleanup(func() {
		cancel()
		<-returned
	})
	return out, done
}

// watched is a writer whose content a test can wait for; it notes when
// each line arrived.
type watched struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	arrivals []time.Time // of each complete line
	changed  chan struct{}
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for range bytes.Count(p, []byte{'\n'}) {
		w.arrivals = append(w.arrivals, now)
	}
	w.buf.Write(p)
	if w.changed != nil {
		close(w.changed)
		w.changed = make(chan struct{})
	}
	return len(p), nil
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// await waits until the content has what; it returns the content.
func (w *watched) await(t *testing.T, what string) string {
	t.Helper()
	deadline := time.After(testwait.Failsafe)
	for {
		w.mu.Lock()
		text, changed := w.buf.String(), w.changed
		w.mu.Unlock()
		if strings.Contains(text, what) {
			return text
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the follower never wrote %q; it wrote:\n%s", what, text)
		}
	}
}

// ended waits for FollowOutput's return, and wants no error.
func ended(t *testing.T, done <-chan error, out *watched) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("FollowOutput: %v; it wrote:\n%s", err, out)
		}
	case <-time.After(testwait.Failsafe):
		t.Fatalf("FollowOutput did not return when the session completed; it wrote:\n%s", out)
	}
}

const linesPlan = `version: 1
phases:
  - name: build
    steps:
      - name: count
        run: 'for i in $(seq 1 %d); do echo "line $i $(date +%%s%%N)"; while [ ! -e go-$i ]; do sleep 0.01; done; done; echo last'
`

// followLinesOverTime: a step prints a line, then waits for a file the
// test makes once the follower wrote the line: each line reaches the
// follower while the step runs, once, in order; then the step's end.
// It logs how long after the step printed a line the follower wrote it.
func followLinesOverTime(t *testing.T, s *temporaltest.DevServer) {
	const n = 20
	f := startFleet(t, s)
	id, dir := f.session(t, fmt.Sprintf(linesPlan, n))
	out, done := f.follow(t, id)
	var delays []time.Duration
	for i := 1; i <= n; i++ {
		text := out.await(t, fmt.Sprintf("line %d ", i))
		delays = append(delays, lineDelay(t, out, text, i))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("go-%d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ended(t, done, out)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != n+3 {
		t.Fatalf("want a header, %d lines, last and the end, got %d lines:\n%s", n, len(lines), out)
	}
	if want := "== phase 1/1 build · step count · attempt 1 · run: "; !strings.HasPrefix(lines[0], want) || !strings.Contains(lines[0], " · on ") {
		t.Fatalf("the header: %q, want it to start %q and name the worker", lines[0], want)
	}
	for i := 1; i <= n; i++ {
		if !strings.HasPrefix(lines[i], fmt.Sprintf("line %d ", i)) {
			t.Fatalf("line %d: %q, want line %d; all:\n%s", i, lines[i], i, out)
		}
	}
	if lines[n+1] != "last" || !regexp.MustCompile(`^== step count exited 0 after [0-9.]+m?s$`).MatchString(lines[n+2]) {
		t.Fatalf("the end: %q", lines[n+1:])
	}
	slices.Sort(delays)
	t.Logf("a line printed to the follower writing it, over %d lines (throttle %v): p50 %v, max %v",
		n, temporal.DefaultHeartbeatThrottle, delays[len(delays)/2].Round(time.Millisecond), delays[len(delays)-1].Round(time.Millisecond))
}

// lineDelay is how long after the step printed line i (its time is on
// the line) the follower wrote it.
func lineDelay(t *testing.T, out *watched, text string, i int) time.Duration {
	t.Helper()
	m := regexp.MustCompile(fmt.Sprintf(`(?m)^line %d (\d+)$`, i)).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("line %d as the step printed it is not in:\n%s", i, text)
	}
	ns, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	lineNo := strings.Count(text[:strings.Index(text, m[0])], "\n")
	return out.arrivals[lineNo].Sub(time.Unix(0, ns))
}

const floodPlan = `version: 1
phases:
  - name: build
    steps:
      - name: flood
        run: 'echo ready; while [ ! -e go ]; do sleep 0.01; done; seq 1 %d'
`

var skipLine = regexp.MustCompile(`(?m)^== (\d+) bytes of the output skipped here \(.*\); pipeline logs on the worker \S+ has them\n`)

// followPastTheBuffer: a step prints far more than a heartbeat holds at
// once: the follower says how many bytes it skipped, and what it wrote
// around that is the step's output at the right offsets.
func followPastTheBuffer(t *testing.T, s *temporaltest.DevServer) {
	const n = 1_000_000 // about 6.9 MB: seeing all of it would take over 100 heartbeats, 100s at the throttle
	f := startFleet(t, s)
	id, dir := f.session(t, fmt.Sprintf(floodPlan, n))
	out, done := f.follow(t, id)
	out.await(t, "ready\n")
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ended(t, done, out)
	var want bytes.Buffer
	want.WriteString("ready\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	text := out.String()
	header, rest, _ := strings.Cut(text, "\n")
	end := regexp.MustCompile(`(?m)^== step flood exited 0 after .*\n\z`).FindStringIndex(rest)
	if !strings.HasPrefix(header, "== phase 1/1 build · step flood") || end == nil {
		t.Fatalf("want the header first and the end last, got:\n%.2000s\n...\n%s", text, text[max(0, len(text)-2000):])
	}
	skipped, segments := reassemble(t, want.Bytes(), rest[:end[0]])
	if skipped == 0 {
		t.Fatalf("want bytes skipped: the step printed %d bytes at once, a heartbeat holds %d", want.Len(), temporal.OutputTailSize)
	}
	t.Logf("of %d bytes, %d skipped, the rest written in %d pieces", want.Len(), skipped, segments)
}

// reassemble checks that got is want with pieces left out, each said by
// a skip line of the right count where it is (after a line break of the
// follower's own when the piece before ended mid-line); it returns the
// bytes skipped and the pieces written.
func reassemble(t *testing.T, want []byte, got string) (skipped int64, pieces int) {
	t.Helper()
	offset := int64(0)
	check := func(piece string, last bool) {
		p := []byte(piece)
		if !bytes.HasPrefix(want[offset:], p) {
			// The follower's own line break before its line.
			if trimmed := bytes.TrimSuffix(p, []byte{'\n'}); len(trimmed) < len(p) && bytes.HasPrefix(want[offset:], trimmed) &&
				(offset+int64(len(trimmed)) == int64(len(want)) || want[offset+int64(len(trimmed))] != '\n') {
				p = trimmed
			} else {
				t.Fatalf("at offset %d the follower wrote %.80q, the step printed %.80q", offset, piece, want[offset:])
			}
		}
		offset += int64(len(p))
		if len(p) > 0 {
			pieces++
		}
		if last && offset != int64(len(want)) {
			t.Fatalf("the follower's output ends at offset %d of %d", offset, len(want))
		}
	}
	at := 0
	for _, m := range skipLine.FindAllStringSubmatchIndex(got, -1) {
		check(got[at:m[0]], false)
		n, _ := strconv.ParseInt(got[m[2]:m[3]], 10, 64)
		skipped += n
		offset += n
		at = m[1]
	}
	check(got[at:], true)
	return skipped, pieces
}

const megabytesPlan = `version: 1
phases:
  - name: build
    steps:
      - name: megabytes
        run: 'yes 0123456789abcdef | head -c %d; while [ ! -e end ]; do sleep 0.01; done'
`

// heartbeatBounded: a step that printed megabytes heartbeats with the
// last OutputTailSize bytes of it, and the offset of the whole.
func heartbeatBounded(t *testing.T, s *temporaltest.DevServer) {
	const size = 17 * 470_000 // whole lines of 17 bytes: about 8 MB
	f := startFleet(t, s)
	id, dir := f.session(t, fmt.Sprintf(megabytesPlan, size))
	var tail *temporal.OutputTail
	var payload int
	deadline := time.After(testwait.Failsafe)
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for tail, payload = lastHeartbeat(t, f, id); tail == nil || tail.Written < size; tail, payload = lastHeartbeat(t, f, id) {
		select {
		case <-poll.C:
		case <-deadline:
			t.Fatalf("no heartbeat with the whole output in %v (last: %+v)", testwait.Failsafe, tail)
		}
	}
	if len(tail.Bytes) != temporal.OutputTailSize || !bytes.HasSuffix(tail.Bytes, []byte("0123456789abcdef\n")) {
		t.Fatalf("the heartbeat holds %d bytes ending %q, want the last %d", len(tail.Bytes), tail.Bytes[max(0, len(tail.Bytes)-20):], temporal.OutputTailSize)
	}
	// JSON holds the bytes in base64: 4/3 of them, and a few fields.
	if limit := temporal.OutputTailSize*4/3 + 2048; payload > limit {
		t.Fatalf("the heartbeat's details are %d bytes, want at most %d", payload, limit)
	}
	t.Logf("a step that printed %d bytes heartbeats %d bytes of details (%d of output)", size, payload, len(tail.Bytes))
	if err := os.WriteFile(filepath.Join(dir, "end"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The session ends before the test does: its worker is done writing
	// in the test's folders when they are removed.
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Failsafe)
	defer cancel()
	if err := f.client.C.GetWorkflow(ctx, id, "").Get(ctx, nil); err != nil {
		t.Fatalf("the session did not end: %v", err)
	}
}

// lastHeartbeat reads the running step's last heartbeat, and the size of
// its details, from the server.
func lastHeartbeat(t *testing.T, f *fleet, id string) (*temporal.OutputTail, int) {
	t.Helper()
	desc, err := f.client.C.DescribeWorkflow(context.Background(), id, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, pa := range desc.RawResponse.GetPendingActivities() {
		details := pa.GetHeartbeatDetails()
		if pa.GetActivityType().GetName() != temporal.ActivityRunStep || details == nil || len(details.Payloads) == 0 {
			continue
		}
		var p temporal.Progress
		if err := converter.GetDefaultDataConverter().FromPayload(details.Payloads[0], &p); err != nil {
			t.Fatal(err)
		}
		size := 0
		for _, pl := range details.Payloads {
			size += len(pl.GetData())
		}
		return p.Tail, size
	}
	return nil, 0
}

const checkpointPlan = `version: 1
agent: {kind: command, command: [sh, -c, 'echo working; while [ ! -e go ]; do sleep 0.01; done; echo "[CHECKPOINT] drafted"']}
phases:
  - name: design
  - name: build
`

// followUntilPaused: a step that checkpoints pauses the session (its
// workflow stays open): the follower writes the step's output and end
// (the checkpoint may stop the step before it exits), then returns. The
// step waits for the follower to show its first line: a follow that
// starts after a step's end does not show it.
func followUntilPaused(t *testing.T, s *temporaltest.DevServer) {
	f := startFleet(t, s)
	id, dir := f.session(t, checkpointPlan)
	out, done := f.follow(t, id)
	out.await(t, "working\n")
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ended(t, done, out)
	text := out.String()
	if !regexp.MustCompile(`(?s)\A== phase 1/2 design · step agent · attempt 1 · agent command · on \S+\nworking\n.*\n== step agent (exited 0|stopped) after [^\n]+\n\z`).MatchString(text) {
		t.Fatalf("want the header, the output and the end, got:\n%s", text)
	}
	status, err := f.client.Status(context.Background(), id)
	if err != nil || status.Status != string(engine.StatusPaused) {
		t.Fatalf("the session: %s %v, want paused", status.Status, err)
	}
}

const restartPlan = `version: 1
phases:
  - name: build
    steps:
      - name: wait
        run: 'echo before; while [ ! -e go ]; do sleep 0.01; done; echo after'
`

// followAcrossRestart: the server restarts while a step runs (a server of
// its own): the follower waits for it and goes on with the step's output
// and end.
func followAcrossRestart(t *testing.T) {
	s := temporaltest.StartDevServer(t)
	f := startFleet(t, s)
	id, dir := f.session(t, restartPlan)
	out, done := f.follow(t, id)
	out.await(t, "before\n")
	s.Restart(t)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ended(t, done, out)
	if text := out.String(); !regexp.MustCompile(`\nbefore\nafter\n== step wait exited 0 after [^\n]+\n\z`).MatchString(text) {
		t.Fatalf("want the output once and the end, got:\n%s", text)
	}
}

const pausePlan = `version: 1
phases:
  - name: build
    steps:
      - name: forever
        run: 'echo working; while :; do sleep 0.01; done'
`

// followThroughAPause: the pause signal cancels the running step's
// activity; the step stops as on Ctrl+C and its result comes back
// (completed, stopped): the follower writes the output, the stopped end,
// and returns.
func followThroughAPause(t *testing.T, s *temporaltest.DevServer) {
	f := startFleet(t, s)
	id, _ := f.session(t, pausePlan)
	out, done := f.follow(t, id)
	out.await(t, "working\n")
	if err := f.client.Pause(context.Background(), id, "lunch", ""); err != nil {
		t.Fatal(err)
	}
	ended(t, done, out)
	if text := out.String(); !regexp.MustCompile(`\nworking\n== step forever stopped after [^\n]+\n\z`).MatchString(text) {
		t.Fatalf("want the output and the stopped end, got:\n%s", text)
	}
}
