package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
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
