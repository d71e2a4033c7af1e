package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A run started with SIGINT and SIGHUP ignored (nohup, trap "" INT, a
// script's job in the background) leaves them ignored: its parent meant
// it to go on through them. A SIGINT then does not pause it, and its
// step's process starts with both ignored, as any program's child does.
func TestSignalsIgnoredAtTheStartStayIgnored(t *testing.T) {
	dir := t.TempDir()
	// The step's shell is the runner's child: $PPID is the runner.
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: one, steps: [{run: \"kill -INT $PPID; grep SigIgn /proc/self/status > ignored\"}]}]\n")
	cmd := exec.Command("sh", "-c", `trap '' INT HUP; exec "$0" run phases.yaml`, binary)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v, want it completed through the SIGINT its parent ignored; output:\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "ignored"))
	if err != nil {
		t.Fatal(err)
	}
	mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(string(data), "SigIgn:")), 16, 64)
	const ignored = 1<<(syscall.SIGHUP-1) | 1<<(syscall.SIGINT-1)
	if err != nil || mask&ignored != ignored {
		t.Fatalf("the step's process: %q, want SIGINT and SIGHUP ignored", data)
	}
}
