package session

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkCheckpoint10000Files10Changed is the time to checkpoint a
// work tree of 10,000 files (100 folders of 100) of which 10 changed
// since the last checkpoint: a snapshot with a temporary index, a
// commit-tree and an update-ref, with the git command.
func BenchmarkCheckpoint10000Files10Changed(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Fatal("git is needed: ", err)
	}
	dir, home := b.TempDir(), b.TempDir()
	for _, kv := range [][2]string{{"HOME", home}, {"GIT_CONFIG_NOSYSTEM", "1"}, {"GIT_AUTHOR_NAME", "b"},
		{"GIT_AUTHOR_EMAIL", "b@example.com"}, {"GIT_COMMITTER_NAME", "b"}, {"GIT_COMMITTER_EMAIL", "b@example.com"}} {
		b.Setenv(kv[0], kv[1])
	}
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	for d := 0; d < 100; d++ {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%02d.go", f)), []byte(fmt.Sprintf("package p\n\n// %d %d\n", d, f)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	git("add", "-A")
	git("commit", "-qm", "10,000 files")
	g := GitFor(dir)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for f := 0; f < 10; f++ {
			name := filepath.Join(dir, fmt.Sprintf("pkg%02d", f*7), fmt.Sprintf("file%02d.go", f))
			if err := os.WriteFile(name, []byte(fmt.Sprintf("package p\n\n// changed %d %d\n", i, f)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if _, err := g.Checkpoint(CheckpointRef("bench", fmt.Sprintf("%02d-phase", i%100)), "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
