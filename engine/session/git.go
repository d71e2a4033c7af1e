package session

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// GitFor returns the git function of the session for a work folder, or nil when
// the folder is not in a git work tree (found by looking for .git upwards,
// without starting git). Files are those changed under the folder, named
// from the repository's root.
func GitFor(dir string) func(base string) (string, []string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			break
		}
		if filepath.Dir(d) == d {
			return nil
		}
	}
	git := func(args ...string) (string, bool) {
		cmd := exec.Command("git", args...)
		cmd.Dir = abs
		out, err := cmd.Output()
		return string(out), err == nil
	}
	return func(base string) (string, []string) {
		head, ok := git("rev-parse", "HEAD")
		head = strings.TrimSpace(head)
		if !ok {
			head = ""
		}
		if base == "" {
			return head, nil
		}
		files := map[string]bool{}
		// Only the pipeline's folder: a pipeline in a corner of a big
		// repository reports its own changes.
		if committed, ok := git("diff", "--name-only", base, "--", "."); ok {
			for _, f := range strings.Fields(committed) {
				files[f] = true
			}
		}
		if status, ok := git("status", "--porcelain", "--untracked-files=all", "--", "."); ok {
			for _, line := range bytes.Split([]byte(strings.TrimRight(status, "\n")), []byte("\n")) {
				if len(line) > 3 {
					name := string(line[3:])
					if i := strings.Index(name, " -> "); i >= 0 {
						name = name[i+4:]
					}
					files[name] = true
				}
			}
		}
		out := make([]string, 0, len(files))
		for f := range files {
			out = append(out, f)
		}
		sort.Strings(out)
		return head, out
	}
}
