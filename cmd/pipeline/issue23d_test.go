package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 23, defect 23: pipeline mcp over stdio exited (rc 1) on any
// malformed frame: bad JSON, [], "jsonrpc":"1.0", an object id, NUL
// bytes, a 200 MB line. Each is answered with a JSON-RPC error (-32700 or
// -32600, id null), in order, and the server goes on serving; a line
// longer than the bound is refused unread.
func TestIssue23MCPStdioSurvivesMalformedFrames(t *testing.T) {
	cmd := exec.Command(binary, "mcp")
	cmd.Dir = t.TempDir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A server that hangs is killed, so that the test ends.
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })

	huge := "\"" + strings.Repeat("x", 20<<20) + "\""
	frames := []struct {
		line string
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, -32700},
		{`[]`, -32600},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, -32600},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, -32600},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600},
		{"\x00\x00\x00", -32700},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\x00\"}", -32700},
		{`42`, -32600},
		{`{"jsonrpc":"2.0"}`, -32600},
		{huge, -32600},
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for _, f := range frames {
			io.WriteString(w, f.line+"\n")
		}
		io.WriteString(w, `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
		io.WriteString(w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		io.WriteString(w, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`+"\n")
		w.Flush()
	}()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the server stopped answering: %v, exit %v; stderr %s", lines.Err(), cmd.Wait(), stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("not JSON on stdout: %q", lines.Text())
		}
		return m
	}
	for _, f := range frames {
		got := next()
		e, _ := got["error"].(map[string]any)
		if id, has := got["id"]; !has || id != nil || e == nil || e["code"] != float64(f.code) || got["jsonrpc"] != "2.0" {
			t.Errorf("frame %.60q: answered %v; want error %d, id null", f.line, got, f.code)
		}
	}
	if got := next(); got["id"] != float64(7) || got["result"] == nil {
		t.Fatalf("initialize after the bad frames: %v", got)
	}
	got := next()
	tools, _ := got["result"].(map[string]any)
	if got["id"] != float64(8) || tools == nil || len(tools["tools"].([]any)) == 0 {
		t.Fatalf("tools/list after the bad frames: %.300v", got)
	}
}

// Issue 23, defect 26: the MCP server's confinement did not cover the
// spec: inside a phases.yaml under the root: a spec outside it was read
// and run. Every tool that loads a pipeline refuses it, by .. or
// through a link. And a .pipeline that is a link out of the
// root was blamed on PIPELINE_STATE_DIR, which was not set: the message
// names the link.
func TestIssue23MCPConfinesTheSpecOfPhasesYAML(t *testing.T) {
	t.Setenv("PIPELINE_STATE_DIR", "")
	root, outside := t.TempDir(), t.TempDir()
	write(t, outside, "spec.md", "---\nnote: secret\n---\n# outside\n")
	const phases = "version: 1\nspec: %s\nphases: [{name: a, steps: [{run: 'touch ran'}]}]\n"
	rel, err := filepath.Rel(filepath.Join(root, "dots"), filepath.Join(outside, "spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "dots/phases.yaml", fmt.Sprintf(phases, rel))
	write(t, root, "link/phases.yaml", fmt.Sprintf(phases, "spec.md"))
	if err := os.Symlink(filepath.Join(outside, "spec.md"), filepath.Join(root, "link", "spec.md")); err != nil {
		t.Fatal(err)
	}
	c := inProcess(t, root)
	for _, dir := range []string{"dots", "link"} {
		file := dir + "/phases.yaml"
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"run", map[string]any{"file": file}},
			{"plan", map[string]any{"file": file}},
			{"validate", map[string]any{"file": file}},
			{"status", map[string]any{"file": file}},
			{"resume", map[string]any{"file": file}},
		} {
			if got := c.callError(t, call.tool, call.args); !strings.Contains(got, "outside the folder") || !strings.Contains(got, "spec") {
				t.Errorf("%s %s: %s; want the spec refused as outside the folder", call.tool, file, got)
			}
		}
	}
	if ran, _ := filepath.Glob(filepath.Join(root, "*", "ran")); len(ran) > 0 {
		t.Errorf("a pipeline with a spec outside the root ran: %v", ran)
	}
	if stores, _ := filepath.Glob(filepath.Join(root, "*", ".pipeline")); len(stores) > 0 {
		t.Errorf("sessions were made: %v", stores)
	}

	// .pipeline, a link out of the root, with PIPELINE_STATE_DIR unset.
	write(t, root, "store/phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'true'}]}]\n")
	if err := os.Symlink(outside, filepath.Join(root, "store", ".pipeline")); err != nil {
		t.Fatal(err)
	}
	got := c.callError(t, "run", map[string]any{"file": "store/phases.yaml"})
	if strings.Contains(got, "PIPELINE_STATE_DIR") || !strings.Contains(got, "symbolic link") || !strings.Contains(got, ".pipeline") {
		t.Errorf("run with .pipeline a link out of the root: %s; want the link named, not PIPELINE_STATE_DIR", got)
	}
}
