package steps

import (
	"os"
	"os/exec"
	"testing"
)

// hasChildren tells a process with a child (running, then exited and
// not reaped) from one with none, which sweep then does not look for in
// /proc. Asked in a test binary of its own: other tests here leave
// adopted processes behind.
func TestHasChildrenSaysWhetherThereIsAChild(t *testing.T) {
	if os.Getenv("STEPS_HAS_CHILDREN") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHasChildrenSaysWhetherThereIsAChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STEPS_HAS_CHILDREN=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	if hasChildren() {
		t.Fatal("a new process has a child")
	}
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	if !hasChildren() {
		t.Error("a process running sleep has no child")
	}
	child.Process.Kill()
	// Exited, not yet reaped: still a child.
	if !hasChildren() {
		t.Error("a process whose child was killed and not reaped has no child")
	}
	child.Wait()
	if hasChildren() {
		t.Error("a process whose one child was reaped still has one")
	}
}
