// Package jaegertest starts a real Jaeger (v2: an OpenTelemetry collector
// with Jaeger's in-memory storage and query API) for the telemetry tests:
// the pinned Jaeger v1.76.0 that make test builds once into .cache/bin
// (scripts/install-jaeger.sh) and names in PIPELINE_JAEGER.
//
// The tests that use it carry the build tag jaeger: go test ./... with Go
// alone does not compile them, and make test sets the tag. Under the tag a
// test that finds no Jaeger fails, saying how to get it; it never skips.
//
// Each Jaeger listens on 127.0.0.1 only, on ports of its own (OTLP/HTTP,
// the query API and UI, the query's gRPC), keeps spans in memory, runs in
// a process group of its own and is stopped, the whole group, when the
// test ends. Metrics it is sent go to its debug exporter, whose lines the
// test can read (Output).
package jaegertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvBinary names the environment variable that holds the path of the
// jaeger binary; make test sets it.
const EnvBinary = "PIPELINE_JAEGER"

const (
	// Jaeger starts in a second or so; a busy machine takes longer.
	startTimeout = 90 * time.Second
	stopGrace    = 10 * time.Second
)

// Jaeger is one running Jaeger.
type Jaeger struct {
	otlpPort, queryPort, grpcPort int
	cmd                           *exec.Cmd
	exited                        chan struct{}
	out                           *output
}

// Start starts Jaeger for the test and stops it when the test ends; it
// fails the test when PIPELINE_JAEGER is not set or Jaeger does not start.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := os.Getenv(EnvBinary)
	if bin == "" {
		t.Fatalf("%s is not set: Jaeger is built by make test (once, into .cache/bin); by hand: "+
			"./scripts/install-jaeger.sh && %s=$PWD/.cache/bin/jaeger-1.76.0/jaeger go test -tags jaeger ./... in the module's root", EnvBinary, EnvBinary)
	}
	var (
		j   *Jaeger
		err error
	)
	// A free port found is free until somebody takes it: a start that
	// lost one tries again with new ports.
	for try := 0; try < 3; try++ {
		if j, err = start(bin, t.TempDir()); err == nil || !errors.Is(err, errPortTaken) {
			break
		}
	}
	if err != nil {
		t.Fatalf("jaeger: %v", err)
	}
	t.Cleanup(j.stop)
	return j
}

var errPortTaken = errors.New("port taken")

func start(bin, dir string) (*Jaeger, error) {
	j := &Jaeger{exited: make(chan struct{}), out: &output{}}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	j.otlpPort, j.queryPort, j.grpcPort = ports[0], ports[1], ports[2]
	config := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(config, []byte(j.config()), 0o600); err != nil {
		return nil, err
	}
	j.cmd = exec.Command(bin, "--config", config)
	j.cmd.Stdout, j.cmd.Stderr = j.out, j.out
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := j.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = j.cmd.Wait()
		close(j.exited)
	}()
	if err := j.awaitReady(); err != nil {
		j.kill()
		if bytes.Contains(j.out.bytes(), []byte("address already in use")) {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, err
	}
	return j, nil
}

// config is Jaeger's configuration: OTLP/HTTP in, spans kept in memory
// and served by the query API, metrics printed by the debug exporter;
// every port its own, on 127.0.0.1; Jaeger's own telemetry off.
func (j *Jaeger) config() string {
	return fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
    metrics:
      receivers: [otlp]
      exporters: [debug]
  telemetry:
    metrics:
      level: none
    logs:
      level: info
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
  debug:
    verbosity: detailed
`, j.queryPort, j.grpcPort, j.otlpPort)
}

// awaitReady polls the query API and the OTLP port until both answer.
func (j *Jaeger) awaitReady() error {
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-j.exited:
			return fmt.Errorf("exited before it was ready:\n%s", j.out.tail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v:\n%s", startTimeout, j.out.tail())
		}
		if j.answers() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (j *Jaeger) answers() bool {
	resp, err := http.Get(j.QueryURL() + "/api/services")
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(j.otlpPort)), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// OTLPEndpoint is the OTLP/HTTP base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
func (j *Jaeger) OTLPEndpoint() string { return "http://127.0.0.1:" + strconv.Itoa(j.otlpPort) }

// QueryURL is the base URL of the query API and of the UI.
func (j *Jaeger) QueryURL() string { return "http://127.0.0.1:" + strconv.Itoa(j.queryPort) }

// Output is what Jaeger printed so far: its logs, and the metrics it was
// sent, as its debug exporter prints them.
func (j *Jaeger) Output() string { return string(j.out.bytes()) }

// Trace is one trace as the query API returns it.
type Trace struct {
	TraceID string `json:"traceID"`
	Spans   []Span `json:"spans"`
}

// Span is a span as the query API returns it.
type Span struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []Reference `json:"references"`
	// StartTime and Duration are in microseconds.
	StartTime int64      `json:"startTime"`
	Duration  int64      `json:"duration"`
	Tags      []KeyValue `json:"tags"`
	Logs      []struct {
		Fields []KeyValue `json:"fields"`
	} `json:"logs"`
}

// Reference is a span's parent (CHILD_OF) or link (FOLLOWS_FROM).
type Reference struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// KeyValue is a tag or a log field.
type KeyValue struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Tag is the span's tag of that key, nil when it has none.
func (s Span) Tag(key string) any {
	for _, kv := range s.Tags {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// Traces are the traces of a service, through GET /api/traces.
func (j *Jaeger) Traces(ctx context.Context, service string) ([]Trace, error) {
	q := url.Values{"service": {service}, "limit": {"100"}, "lookback": {"1h"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.QueryURL()+"/api/traces?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Data   []Trace `json:"data"`
		Errors []struct {
			Msg string `json:"msg"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("GET /api/traces: %s: %w", resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK && len(body.Errors) > 0 {
		return nil, fmt.Errorf("GET /api/traces: %s: %s", resp.Status, body.Errors[0].Msg)
	}
	return body.Data, nil
}

// AwaitTraces polls the query API until ok holds of the service's traces
// (the collector stores what it receives asynchronously), or fails the
// test after a minute with the last traces it saw.
func (j *Jaeger) AwaitTraces(t testing.TB, service string, ok func([]Trace) bool) []Trace {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		traces, err := j.Traces(ctx, service)
		cancel()
		if err == nil && ok(traces) {
			return traces
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger: the traces of %s never became what the test awaits (%v): %+v", service, err, traces)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (j *Jaeger) stop() {
	j.kill()
}

// kill stops the group: SIGTERM, SIGKILL after the grace.
func (j *Jaeger) kill() {
	pid := j.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-j.exited:
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-j.exited
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// freePorts are n ports free on 127.0.0.1 now, all different.
func freePorts(n int) ([]int, error) {
	var (
		ports     []int
		listeners []net.Listener
	)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// output keeps what Jaeger prints.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// grew is closed and replaced at each write, so that a wait on the
	// output wakes when Jaeger writes.
	grew chan struct{}
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.grew != nil {
		close(o.grew)
		o.grew = nil
	}
	return o.buf.Write(p)
}

// next is closed at the next write.
func (o *output) next() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.grew == nil {
		o.grew = make(chan struct{})
	}
	return o.grew
}

func (o *output) bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return bytes.Clone(o.buf.Bytes())
}

func (o *output) tail() string {
	b := o.bytes()
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// AwaitOutput waits until ok holds of Jaeger's output, looking again at
// each write, or fails the test after a minute.
func (j *Jaeger) AwaitOutput(t testing.TB, ok func(string) bool) {
	t.Helper()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for {
		wrote := j.out.next()
		if ok(j.Output()) {
			return
		}
		select {
		case <-wrote:
		case <-timeout.C:
			t.Fatalf("jaeger's output never became what the test awaits:\n%s", j.out.tail())
		}
	}
}
