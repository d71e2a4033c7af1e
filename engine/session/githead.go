package session

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// readHead reads HEAD from the ref files, as git would, without starting
// git: HEAD is read at every snapshot, and a git process costs more than
// the step it frames when the step is short. ok is false when the refs
// are not kept in plain files (reftable), when the files say something
// this reader does not know, or when the git folders are unknown: git is
// asked then.
func (g *Git) readHead() (head string, ok bool) {
	paths := g.paths()
	if paths.gitDir == "" || paths.common == "" {
		return "", false
	}
	if _, err := os.Stat(filepath.Join(paths.common, "reftable")); !os.IsNotExist(err) {
		return "", false
	}
	content, found, ok := readRefFile(filepath.Join(paths.gitDir, "HEAD"))
	if !found || !ok {
		return "", false
	}
	// A symbolic ref names a ref, which may name another: git follows
	// five levels at most.
	for range 5 {
		ref, symbolic := strings.CutPrefix(content, "ref: ")
		if !symbolic {
			if isObjectName(content) {
				return content, true
			}
			return "", false
		}
		ref = strings.TrimSpace(ref)
		if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
			return "", false
		}
		content, found, ok = readRefFile(filepath.Join(refFolder(paths, ref), filepath.FromSlash(ref)))
		if !ok {
			return "", false
		}
		if !found {
			commit, packed, ok := packedRef(paths.common, ref)
			if !ok {
				return "", false
			}
			if !packed {
				// A branch with no commit yet: HEAD names nothing.
				return "", true
			}
			return commit, true
		}
	}
	return "", false
}

// refFolder is the git folder that keeps ref: a work tree's own refs
// are in its git folder, the rest in the common one.
func refFolder(paths gitPaths, ref string) string {
	for _, own := range []string{"refs/worktree/", "refs/bisect/", "refs/rewritten/"} {
		if strings.HasPrefix(ref, own) {
			return paths.gitDir
		}
	}
	return paths.common
}

// readRefFile reads a loose ref. found is false when there is no such
// file; ok is false when it could not be read as one.
func readRefFile(path string) (content string, found, ok bool) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", false, true
	}
	if err != nil {
		return "", false, false
	}
	return strings.TrimSpace(string(data)), true, true
}

// packedRef looks ref up in the common folder's packed-refs. ok is false
// when the file could not be read.
func packedRef(common, ref string) (commit string, found, ok bool) {
	f, err := os.Open(filepath.Join(common, "packed-refs"))
	if os.IsNotExist(err) {
		return "", false, true
	}
	if err != nil {
		return "", false, false
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 0, 4096), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		name, refname, cut := strings.Cut(line, " ")
		if cut && refname == ref {
			if !isObjectName(name) {
				return "", false, false
			}
			return name, true, true
		}
	}
	if lines.Err() != nil {
		return "", false, false
	}
	return "", false, true
}

// isObjectName tells whether s is a full object name: 40 hex digits
// (SHA-1) or 64 (SHA-256).
func isObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
