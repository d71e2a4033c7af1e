package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A folder git ignores (a pipeline under an ignored build folder) costs
// every run a git check-ignore: a process of 2 ms of CPU and more of
// waiting, a third of what a run of one step costs beyond the step. Git's
// "ignored" is kept in the user's cache with a fingerprint of everything
// git reads to give it (the .gitignore files from the top of the work
// tree down, the index, the excludes files, the config files), so that a
// later run takes it without asking while none of them changed. Only
// "ignored" is kept: a folder git does not ignore is in a work tree where
// every run starts git for its checkpoints anyway. Whatever the
// fingerprint cannot vouch for (GIT_* in the environment, a config that
// names another excludes file or includes another config) is asked of
// git each time.

// ignoredMagic starts a cache entry; its version changes with the
// fingerprint's making.
const ignoredMagic = "pipeline git-ignored 1\n"

// ignoredEntry is the cache file of dir's answer, "" without a cache
// folder.
func ignoredEntry(dir string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(base, "pipeline", "gitignored", hex.EncodeToString(sum[:16]))
}

// ignoredBefore tells whether git said dir (below top, the top of its
// work tree) is ignored, with the fingerprint it has now. It returns the
// fingerprint for rememberIgnored, "" when none can vouch for the answer.
func ignoredBefore(top, dir string) (ignored bool, fingerprint string) {
	fingerprint, ok := ignoreFingerprint(top, dir)
	if !ok {
		return false, ""
	}
	entry := ignoredEntry(dir)
	if entry == "" {
		return false, ""
	}
	kept, err := os.ReadFile(entry)
	return err == nil && string(kept) == ignoredMagic+fingerprint, fingerprint
}

// rememberIgnored keeps git's "ignored" for dir with the fingerprint
// taken before git was asked: a file changed meanwhile makes the entry
// stale, never wrong. A cache that cannot be written costs only speed.
func rememberIgnored(dir, fingerprint string) {
	entry := ignoredEntry(dir)
	if fingerprint == "" || entry == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(entry), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(entry), ".tmp-")
	if err != nil {
		return
	}
	_, err = tmp.WriteString(ignoredMagic + fingerprint)
	if closeErr := tmp.Close(); err == nil && closeErr == nil {
		err = os.Rename(tmp.Name(), entry)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}

// redirectsGit tells the variables that make git read a file the
// fingerprint does not follow (another git folder, index or config).
// The other GIT_* variables are part of the fingerprint.
func redirectsGit(name string) bool {
	switch name {
	case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
		"GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS":
		return true
	}
	return false
}

// ignoreFingerprint hashes what git check-ignore reads to say whether
// dir is ignored; false when it cannot tell all of it.
func ignoreFingerprint(top, dir string) (string, bool) {
	h := sha256.New()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if redirectsGit(name) {
			return "", false
		}
		if strings.HasPrefix(name, "GIT_") {
			fmt.Fprintf(h, "%s\n", kv)
		}
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	gitDir, common, ok := gitFolders(top)
	if !ok {
		return "", false
	}
	home, xdg := os.Getenv("HOME"), os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" {
		xdg = filepath.Join(home, ".config")
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\n", top, dir, home, xdg)
	for _, config := range []string{"/etc/gitconfig", filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config"),
		filepath.Join(common, "config"), filepath.Join(gitDir, "config.worktree")} {
		if !hashConfig(h, config) {
			return "", false
		}
	}
	files := []string{filepath.Join(top, ".git"), filepath.Join(gitDir, "index"), filepath.Join(gitDir, "info", "exclude"),
		filepath.Join(common, "info", "exclude"), filepath.Join(xdg, "git", "ignore")}
	d := top
	files = append(files, filepath.Join(d, ".gitignore"))
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, name)
		files = append(files, filepath.Join(d, ".gitignore"))
	}
	for _, f := range files {
		hashStat(h, f)
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// gitFolders finds the git folder of the work tree at top and the folder
// it shares with other work trees: .git, or what a .git file names.
func gitFolders(top string) (gitDir, common string, ok bool) {
	dotGit := filepath.Join(top, ".git")
	info, err := os.Stat(dotGit)
	if err != nil {
		return "", "", false
	}
	if info.IsDir() {
		return dotGit, dotGit, true
	}
	content, err := os.ReadFile(dotGit)
	if err != nil {
		return "", "", false
	}
	gitDir, found := strings.CutPrefix(strings.TrimSpace(string(content)), "gitdir: ")
	if !found {
		return "", "", false
	}
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(top, gitDir)
	}
	common = gitDir
	if named, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = strings.TrimSpace(string(named))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	return gitDir, common, true
}

// hashConfig adds a config file's content to h; false for one that names
// a file the fingerprint does not follow (another excludes file, an
// included config).
func hashConfig(h hash.Hash, path string) bool {
	content, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(h, "%s -\n", path)
		return os.IsNotExist(err)
	}
	lower := bytes.ToLower(content)
	if bytes.Contains(lower, []byte("excludesfile")) || bytes.Contains(lower, []byte("include")) {
		return false
	}
	fmt.Fprintf(h, "%s %d\n", path, len(content))
	h.Write(content)
	return true
}

// hashStat adds what tells a file's change to h: its inode, size and
// times (the change time, which no one sets by hand, included), or that
// it is not there.
func hashStat(h hash.Hash, path string) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		fmt.Fprintf(h, "%s -\n", path)
		return
	}
	fmt.Fprintf(h, "%s %d %d %d %d %d\n", path, st.Ino, st.Size, st.Mtim.Nano(), st.Ctim.Nano(), st.Mode)
}
