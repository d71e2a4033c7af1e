package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A file rewritten with the same size in the second the index was written
// has stat data the index cannot vouch for (racy git): git looks at its
// content again. The snapshot's copy of the index must keep that, or the
// snapshot keeps the old content.
func TestSnapshotSeesARacilyCleanRewrite(t *testing.T) {
	repo := t.TempDir()
	for _, kv := range [][2]string{{"HOME", t.TempDir()}, {"GIT_CONFIG_NOSYSTEM", "1"}} {
		t.Setenv(kv[0], kv[1])
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@t", "-c", "user.name=t"}, args...)...)
		cmd.Dir = repo
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	spec := filepath.Join(repo, "spec.md")
	git("init", "-q")
	if err := os.WriteFile(spec, []byte("# greeting v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-qm", "v1")
	// The file and the index, as when both were written in one second.
	then := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(spec, then, then); err != nil {
		t.Fatal(err)
	}
	git("update-index", "--refresh")
	if err := os.WriteFile(spec, []byte("# greeting v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{spec, filepath.Join(repo, ".git", "index")} {
		if err := os.Chtimes(f, then, then); err != nil {
			t.Fatal(err)
		}
	}
	_, tree := GitFor(repo).Snapshot()
	if got := git("cat-file", "-p", tree+":spec.md"); got != "# greeting v2" {
		t.Errorf("the snapshot holds spec.md as %q, want the rewrite (# greeting v2)", got)
	}
}
