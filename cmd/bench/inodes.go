package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

var inodesOnly = flag.Bool("inodes", false, "count the inodes a pipeline run of one true step makes and deletes (strace, in a folder of -dir; with -startup-against, that binary's too)")

// inodesFigures counts, for pipeline (and against, when given), the
// inodes a run of one true step makes and deletes, the store made and
// the caches warm (three runs before): on a disk such as ext4 each
// inode made costs time in proportion to those deleted lately near it,
// and each deleted makes the next runs' dearer. It runs strace; the
// files made are told from those opened by what was there before the
// run and what the run made and removed on the way.
func inodesFigures(pipeline, against, work string, runs int) {
	if _, err := exec.LookPath("strace"); err != nil {
		check(fmt.Errorf("-inodes needs strace: %w", err))
	}
	fmt.Printf("pipeline bench -inodes: a run of one step (run: \"true\"), files in %s\n", work)
	for i, binary := range []string{pipeline, against} {
		if binary == "" {
			continue
		}
		dir := filepath.Join(work, fmt.Sprintf("inodes-%d", i))
		check(os.RemoveAll(dir))
		check(os.MkdirAll(dir, 0o755))
		check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(startupYAML), 0o644))
		for range 3 {
			runIn(dir, binary, "run", "phases.yaml")
		}
		before := pathsUnder(dir)
		if cache, err := os.UserCacheDir(); err == nil {
			for p := range pathsUnder(filepath.Join(cache, "pipeline")) {
				before[p] = true
			}
		}
		trace := filepath.Join(dir, "..", fmt.Sprintf("inodes-%d.strace", i))
		runIn(dir, "strace", "-f", "-y", "-qq", "-o", trace, "-e", "trace=openat,mkdirat,renameat,renameat2,unlinkat,fsync,fdatasync",
			"-e", "status=successful", binary, "run", "phases.yaml")
		content, err := os.ReadFile(trace)
		check(err)
		os.Remove(trace)
		made, deleted := inodeChurn(content, before)
		syncs := strings.Count(string(content), " fsync(") + strings.Count(string(content), " fdatasync(")
		fmt.Printf("%s: %d inodes made, %d deleted, %d fsyncs\n", binary, len(made), len(deleted), syncs)
		fmt.Printf("   made: %s\n   deleted: %s\n", strings.Join(relTo(dir, made), ", "), strings.Join(relTo(dir, deleted), ", "))
		check(os.RemoveAll(dir))
	}
	if against != "" {
		apartFigure(pipeline, against, work, runs)
	}
}

// apartFigure times runs of pipeline and against in turns, each with
// stores of its own (as -startup does; a store shared would let the one's
// deleted inodes cost the other's creations as much as its own). Each
// binary runs in two folders, in the order A B B A within a turn, and
// each binary's figure pools its two folders' runs.
func apartFigure(pipeline, against, work string, runs int) {
	trueBin, err := exec.LookPath("true")
	check(err)
	// Both binaries are copies written now: a binary's pages as a write
	// left them start it 2-3 ms faster than pages read in by exec (see
	// -startup's a and b; a control of one binary against a copy of
	// itself showed it), which would favour a binary just built.
	a, b := writtenCopy(work, pipeline), writtenCopy(work, against)
	commands := [][]string{{trueBin}}
	for i, binary := range []string{a, b, b, a} {
		dir := filepath.Join(work, fmt.Sprintf("apart-%d", i))
		check(os.MkdirAll(dir, 0o755))
		check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(startupYAML), 0o644))
		commands = append(commands, []string{binary, "run", filepath.Join(dir, "phases.yaml")})
	}
	fmt.Printf("\npipeline run of one step against %s, %d runs each in turn, each binary in two stores of its own, in the order A B B A (load %s)\n",
		trueBin, runs, loadAverage())
	t := inTurns(runs, commands...)
	pool := func(a, b int) ([]time.Duration, []time.Duration, int64) {
		wall := append(append([]time.Duration{}, t.wall[a]...), t.wall[b]...)
		cpu := append(append([]time.Duration{}, t.cpu[a]...), t.cpu[b]...)
		slices.Sort(wall)
		slices.Sort(cpu)
		faults := append(append([]int64{}, t.faults[a]...), t.faults[b]...)
		slices.Sort(faults)
		return wall, cpu, faults[len(faults)/2]
	}
	fmt.Printf("   %-40s p50 %-9v p90 %-9v %-22s CPU p50 %-9v faults p50 %d\n", trueBin, pct(t.wall[0], 50), pct(t.wall[0], 90), "",
		pct(t.cpu[0], 50), t.faults[0][len(t.faults[0])/2])
	for _, c := range [][2]int{{1, 4}, {2, 3}} {
		wall, cpu, faults := pool(c[0], c[1])
		overhead := fmt.Sprintf("overhead p50 %-9v", pct(wall, 50)-pct(t.wall[0], 50))
		fmt.Printf("   %-40s p50 %-9v p90 %-9v %-22s CPU p50 %-9v faults p50 %d\n", []string{pipeline, against}[c[0]-1], pct(wall, 50), pct(wall, 90),
			overhead, pct(cpu, 50), faults)
	}
	fmt.Printf("   (load %s)\n", loadAverage())
}

// runIn runs a command in dir, its output dropped; a failure stops the
// bench.
func runIn(dir, name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		check(fmt.Errorf("%s %v: %v\n%s", name, args, err, out))
	}
}

// pathsUnder lists every path under root (none when it is not there).
func pathsUnder(root string) map[string]bool {
	found := map[string]bool{}
	_ = filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err == nil {
			found[path] = true
		}
		return nil
	})
	return found
}

// traced is a call of strace -y's output: its name, its arguments (the
// descriptors named by their paths) and what it returned.
var traced = regexp.MustCompile(`^(?:\d+ +)?(openat|mkdirat|renameat2?|unlinkat)\((.*)\) += (\S+)`)

// fdArg is a descriptor argument as strace -y writes it: 11</a/folder>.
var fdArg = regexp.MustCompile(`^(?:\d+|AT_FDCWD)<([^>]*)>$`)

// inodeChurn reads an strace -f -y log of the calls that make and remove
// files, and returns the paths whose inode was made, and those whose
// inode was deleted (unlinked, or renamed over), before being what was
// there before the run.
func inodeChurn(log []byte, before map[string]bool) (made, deleted []string) {
	there := func(p string) bool { return before[p] }
	now := map[string]bool{}
	exists := func(p string) bool {
		if v, ok := now[p]; ok {
			return v
		}
		return there(p)
	}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := traced.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		args := splitArgs(m[2])
		path := func(i int) string { return joinAt(args, i) }
		switch m[1] {
		case "openat":
			if len(args) < 3 || !strings.Contains(args[2], "O_CREAT") {
				continue
			}
			p := path(0)
			if strings.Contains(args[2], "O_EXCL") || !exists(p) {
				made = append(made, p)
			}
			now[p] = true
		case "mkdirat":
			p := path(0)
			made = append(made, p)
			now[p] = true
		case "unlinkat":
			p := path(0)
			deleted = append(deleted, p)
			now[p] = false
		case "renameat", "renameat2":
			from, to := path(0), path(2)
			if exists(to) {
				deleted = append(deleted, to+" (renamed over)")
			}
			now[from], now[to] = false, true
			for j := range made {
				// Named as it is now, not as it was made.
				if made[j] == from {
					made[j] = to
				} else if rest, ok := strings.CutPrefix(made[j], from+"/"); ok {
					made[j] = to + "/" + rest
				}
			}
		}
	}
	return made, deleted
}

// splitArgs splits strace's arguments at the commas outside quotes.
func splitArgs(s string) []string {
	var args []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(args, strings.TrimSpace(s[start:]))
}

// joinAt is the path of the (descriptor, name) pair at args[i].
func joinAt(args []string, i int) string {
	if i+1 >= len(args) {
		return ""
	}
	name := strings.Trim(args[i+1], `"`)
	if filepath.IsAbs(name) {
		return name
	}
	if m := fdArg.FindStringSubmatch(args[i]); m != nil {
		return filepath.Join(m[1], name)
	}
	return name
}

// relTo names paths under dir relative to it.
func relTo(dir string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = rel
		}
		out[i] = p
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
