package steps

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestChildEnvIsOsExecs checks the environment spawn gives a child
// against the one os/exec would have given it.
func TestChildEnvIsOsExecs(t *testing.T) {
	t.Setenv("PIPELINE_SPAWN_TEST", "from the parent")
	dir := t.TempDir()
	for _, c := range []Command{
		{Env: nil},
		{Env: nil, Dir: dir},
		{Env: []string{"A=1", "B=2", "A=3", "C=", "NOEQUALS", "", "=X=1", "=X=2", "=odd", "=odd2"}, Dir: dir},
		{Env: []string{}},
	} {
		got, err := childEnv(c)
		if err != nil {
			t.Fatal(err)
		}
		want := (&exec.Cmd{Env: c.Env, Dir: c.Dir}).Environ()
		if !slices.Equal(got, want) {
			t.Errorf("env %q, dir %q: spawn gives\n%q\nos/exec gives\n%q", c.Env, c.Dir, got, want)
		}
	}
	if _, err := childEnv(Command{Env: []string{"A=x\x00y"}}); err == nil {
		t.Error("an entry with a NUL was taken")
	}
}

// TestStartRunsPathWithArgsAsGiven checks that a Path looked up by the
// caller is the program run, under the name Args gives it.
func TestStartRunsPathWithArgsAsGiven(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(Command{Args: []string{"no-such-program-on-path", "-c", `echo "$0"`}, Path: sh, MergeOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(p.Stdout)
	if code, err := p.Wait(); code != 0 || err != nil {
		t.Fatalf("exit %d, %v", code, err)
	}
	if got := strings.TrimSpace(string(out)); got != "no-such-program-on-path" {
		t.Fatalf("$0 is %q, want the name Args gave", got)
	}
	if _, err := Start(Command{Args: []string{"no-such-program-on-path"}}); err == nil || !strings.Contains(err.Error(), exec.ErrNotFound.Error()) {
		t.Fatalf("a missing program gave %v, want os/exec's not-found error", err)
	}
}

// TestStdinIsWrittenToTheChild checks the three kinds of standard input:
// a reader (fed through a pipe), a file (given as it is), none
// (/dev/null, opened once: a second step without input has it still).
func TestStdinIsWrittenToTheChild(t *testing.T) {
	big := strings.Repeat("x", 3<<20) // more than a pipe holds
	file, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteString("from a file"); err != nil {
		t.Fatal(err)
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stdin io.Reader
		want  string
	}{{strings.NewReader(big), big}, {file, "from a file"}, {nil, ""}, {nil, ""}} {
		p, err := Start(Command{Args: []string{"cat"}, Stdin: c.stdin, MergeOutput: true})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(p.Stdout)
		if code, err := p.Wait(); code != 0 || err != nil {
			t.Fatalf("exit %d, %v", code, err)
		}
		if string(out) != c.want {
			t.Errorf("cat read %d bytes, want %d", len(out), len(c.want))
		}
	}
}

// TestALeftoverHoldingStdinDoesNotHoldTheEnd checks that a step whose
// leftover holds its standard input open, unread, with more input still
// to write, ends once its own process exits: the leftover is killed
// before the writing of the input is waited for (os/exec waited for it
// first, for good).
func TestALeftoverHoldingStdinDoesNotHoldTheEnd(t *testing.T) {
	p, err := Start(Command{Args: []string{"sh", "-c", `sleep 60 <&0 & echo started`}, Stdin: strings.NewReader(strings.Repeat("x", 3<<20)), MergeOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(time.Second) })
	go func() { _, _ = io.Copy(io.Discard, p.Stdout) }()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the step did not end while its leftover held its input")
	}
	if code, _ := p.Wait(); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if left := p.Leftovers(); len(left) != 1 {
		t.Fatalf("leftovers %v, want the sleep", left)
	}
}

// BenchmarkStartTrue is a step's process started, read to its end and
// waited for: /bin/true, as the start-up figure's step runs.
func BenchmarkStartTrue(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		p, err := Start(Command{Args: []string{"true"}, MergeOutput: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, p.Stdout); err != nil {
			b.Fatal(err)
		}
		if code, err := p.Wait(); code != 0 || err != nil {
			b.Fatalf("exit %d, %v", code, err)
		}
		p.closeOutputs()
	}
}
