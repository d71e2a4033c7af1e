//go:build !temporal

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/web"
)

// The lean build links no HTTP client (nor the Temporal SDK): net/http
// and crypto/tls would cost each of its starts some forty package inits;
// nor runtime/pprof, which turns the runtime's memory profiling on.
func TestLeanBuildLinksNoHTTPNorProfiler(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "net/http" || pkg == "crypto/tls" || pkg == "runtime/pprof" || strings.HasPrefix(pkg, "go.temporal.io/") || strings.HasPrefix(pkg, "google.golang.org/grpc") {
			t.Errorf("the lean build links %s", pkg)
		}
	}
}

// fleetWebOnPath puts the pipeline-temporal built beside the tested
// pipeline on PATH, where fleetWeb finds it from this test binary.
func fleetWebOnPath(t *testing.T) {
	t.Setenv("PATH", filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// The lean build's POST is pipeline-temporal's: the request's headers
// and body reach the server, the answer's status and the first Keep
// bytes of its body come back.
func TestLeanPostGoesThroughPipelineTemporal(t *testing.T) {
	fleetWebOnPath(t)
	var (
		mu                 sync.Mutex
		gotBody, gotHeader string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotBody, gotHeader = string(b), r.Header.Get("X-Test")
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, "made it")
	}))
	defer srv.Close()
	// As run sets it up: the relay is made at the first POST.
	first := &firstUseWeb{}
	if first.relay.Env != nil {
		t.Fatal("the relay was made before its first use")
	}
	resp, err := first.Post(context.Background(), web.Request{URL: srv.URL + "/hook",
		Header: [][2]string{{"X-Test", "yes"}}, Body: []byte("hello"), Keep: 4})
	self, _ := os.Executable()
	if env := first.relay.Env; len(env) != len(os.Environ())+1 || env[len(env)-1] != handedOffEnv+"="+self {
		t.Errorf("the relay's environment is %d variables ending %q, want the start's and %s=%s", len(env), env[max(0, len(env)-1):], handedOffEnv, self)
	}
	mu.Lock()
	defer mu.Unlock()
	if err != nil || resp.StatusCode != http.StatusCreated || string(resp.Body) != "made" || gotBody != "hello" || gotHeader != "yes" {
		t.Errorf("post: %+v, %v; the server got %q, X-Test %q", resp, err, gotBody, gotHeader)
	}
	// Nothing listens there now: the error names no path of the URL,
	// which may be a webhook's secret.
	srv.Close()
	_, err = fleetWeb().Post(context.Background(), web.Request{URL: srv.URL + "/very-secret"})
	if err == nil || strings.Contains(err.Error(), "very-secret") {
		t.Errorf("post to a closed server: %v", err)
	}
}

// The lean build's refusing listener (the gemini step's) is
// pipeline-temporal's: HTTP 400 and the body to any request, until
// stopped.
func TestLeanRefusalGoesThroughPipelineTemporal(t *testing.T) {
	fleetWebOnPath(t)
	const body = `{"error":{"code":400}}`
	addr, stop, err := fleetWeb().Refuse(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+addr+"/v1/models", "application/json", strings.NewReader("{}"))
	if err != nil {
		stop()
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || string(answer) != body {
		t.Errorf("answer: %s %q", resp.Status, answer)
	}
	stop()
	if resp, err := http.Get("http://" + addr); err == nil {
		resp.Body.Close()
		t.Errorf("%s still answers once stopped", addr)
	}
}

// Without pipeline-temporal a webhook is not sent, and that is said;
// the run ends as it would have.
func TestWebhookWithoutPipelineTemporal(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { posts.Add(1) }))
	defer srv.Close()
	_, pipelinePath := lonelyBinary(t)
	project := t.TempDir()
	write(t, project, "phases.yaml", `version: 1
notify: {webhook: [{url: "`+srv.URL+`/hook", format: slack}]}
phases:
  - name: build
    steps:
      - run: "exit 4"
`)
	r, _ := runBinary(t, pipelinePath, project, []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, "run")
	said := r.stdout + r.stderr
	if r.code != exitFailed || !strings.Contains(said, "notify.webhook[0]") || !strings.Contains(said, "needs pipeline-temporal") || posts.Load() != 0 {
		t.Errorf("run: exit %d, %d posts:\n%s", r.code, posts.Load(), said)
	}
}

// PIPELINE_CPUPROFILE is pipeline-temporal's: the lean build says so and
// goes on; pipeline-temporal writes the profile.
func TestCPUProfileIsPipelineTemporals(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "cpu.pprof")
	env := append(os.Environ(), "PIPELINE_CPUPROFILE="+profile)
	r, _ := runBinary(t, binary, dir, env, "--version")
	if r.code != 0 || !strings.Contains(r.stderr, "PIPELINE_CPUPROFILE: this build writes no CPU profile") || fileExists(profile) {
		t.Errorf("pipeline: exit %d, %s", r.code, r.stderr)
	}
	r, _ = runBinary(t, filepath.Join(filepath.Dir(binary), fleetBinary), dir, env, "--version")
	if info, err := os.Stat(profile); r.code != 0 || err != nil || info.Size() == 0 {
		t.Errorf("pipeline-temporal: exit %d, %v, %s", r.code, err, r.stderr)
	}
}
