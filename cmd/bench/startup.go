package main

import (
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

var (
	startupOnly    = flag.Bool("startup", false, "measure start-up alone, side by side: pipeline --version against a binary of cobra alone, pipeline run of one true step against /bin/true")
	startupAgainst = flag.String("startup-against", "", "another pipeline binary (an earlier build) measured in the same turns as -pipeline by -startup, for a figure before and after a change")
)

// cobraOnly is a command with cobra alone and a version, built from this
// module (its cobra, its go.mod) for the start-up figure's reference.
const cobraOnly = `package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{Use: "cobra-only", Short: "cobra alone", Version: "1", Run: func(*cobra.Command, []string) {}}
	if root.Execute() != nil {
		os.Exit(1)
	}
}
`

// startupFigures measures, in turns, pipeline --version against a
// cobra-only binary built as make build builds pipeline, and pipeline
// run of a one-step pipeline (run: "true") against /bin/true where a
// user runs it: in a folder no git work tree holds (or one git ignores)
// and in a git work tree (where each run checkpoints and snapshots), on
// work's disk (the project's disk under make bench: the store's fsyncs
// cost there what they cost a user) and in memory. Each figure is
// printed with the load average of the minute it was measured in.
func startupFigures(pipeline, against, work string, runs int) {
	fmt.Printf("pipeline bench -startup: %s, %d cores, files in %s\n", pipeline, numCPU(), work)
	fmt.Printf("load average before: %s\n", loadAverage())
	if against != "" {
		fmt.Printf("the other pipeline, measured in the same turns: %s\n", against)
	}
	if dynamic := dynamicallyLinked(pipeline); dynamic != "" {
		fmt.Printf("note: %s is linked dynamically (%s): built with cgo, it starts ~1-2 ms slower than make build's CGO_ENABLED=0 binary\n", pipeline, dynamic)
	}
	fmt.Println()
	cobra := buildCobraOnly(work, pipeline)

	built := "CGO_ENABLED=0"
	if experiments := builtWithExperiments(pipeline); experiments != "" {
		built += ", GOEXPERIMENT=" + experiments + " as pipeline"
	}
	fmt.Printf("1. pipeline --version against a Go binary of cobra alone (%s), %d runs each\n", built, runs)
	fmt.Println("   " + stateReadByExec)
	commands := versionCommands(cobra, pipeline, against)
	t := sideBySide(runs, commands...)
	versionFigure(t)
	firstRuns(t, commands)
	fmt.Println("   " + stateWritten)
	againstCopy := ""
	if against != "" {
		againstCopy = writtenCopy(work, against)
	}
	versionFigure(inTurns(runs, versionCommands(writtenCopy(work, cobra), writtenCopy(work, pipeline), againstCopy)...))
	fmt.Println("   " + stateCopied)
	if against != "" {
		againstCopy = cpCopy(work, against)
	}
	versionFigure(inTurns(runs, versionCommands(cpCopy(work, cobra), cpCopy(work, pipeline), againstCopy)...))
	fmt.Println()

	trueBin, err := exec.LookPath("true")
	check(err)
	binaries := []string{pipeline}
	if against != "" {
		binaries = append(binaries, against)
	}
	places := runPlaces(work, len(binaries))
	fmt.Printf("2. pipeline run of one step (run: \"true\") against %s, %d runs each, all in turn; the sessions stay in the store, as a project's do, each binary's in a store of its own\n", trueBin, runs)
	fmt.Println("   " + stateReadByExec)
	commands = runCommands(trueBin, places, binaries)
	// One run in each place first, so that the first run after the drop
	// reads the binary from disk but does not also make its store.
	inTurns(0, commands...)
	t = sideBySide(runs, commands...)
	runFigure(t, trueBin, places, len(binaries))
	firstRuns(t, commands)
	fmt.Println("   " + stateWritten)
	for i, b := range binaries {
		binaries[i] = writtenCopy(work, b)
	}
	runFigure(inTurns(runs, runCommands(trueBin, places, binaries)...), trueBin, places, len(binaries))
	for _, p := range places {
		if p.cleanup != nil {
			p.cleanup()
		}
	}
	fmt.Println()
	fmt.Printf("load average after: %s\n", loadAverage())
}

// The states of a binary's pages in the page cache that -startup
// measures. The kernel (6.18, ext4) keeps a file's pages in folios as
// large as the writes or the reads that brought them in: exec's faults
// read a binary in 4 KiB folios, which each later start maps 16 at a
// fault, each counted in and out, where one write(2) of the whole file
// leaves 2 MiB folios, each mapped by one fault (a PMD; FilePmdMapped in
// smaps) — 100 faults and 1.1-1.6 ms a start less here. The Go linker
// writes through a memory map, so go build and go install leave 4 KiB
// folios too; cp and install(1) leave 64 KiB ones (16 times fewer
// folios, as many faults: about three quarters of the way to b's time).
const (
	stateReadByExec = "a. each binary's pages dropped from the cache, then read in by its first run's exec (4 KiB folios: as go build and go install leave a binary, and as it is once the cache has let its pages go)"
	stateWritten    = "b. each binary a copy written by one write(2) (2 MiB folios: as make build and make install leave it)"
	stateCopied     = "c. each binary a copy made by cp (64 KiB folios here: as cp and install(1) leave it)"
)

// firstRuns prints the wall time of the first run of each program of
// commands after sideBySide dropped its pages, the run that read it from
// disk: one run each, what a start costs once the cache has let the
// binary go (here DAMON pages out file pages that no process maps and
// none touched for a minute or more).
func firstRuns(t turns, commands [][]string) {
	fmt.Print("      one run each, the program read from disk (the untimed first):")
	seen := map[string]bool{}
	for c, args := range commands {
		if !seen[args[0]] {
			seen[args[0]] = true
			fmt.Printf(" %s %v;", args[0], t.first[c].Round(10*time.Microsecond))
		}
	}
	fmt.Println()
}

// runCommands are /bin/true, then each binary's run of the one-step
// pipeline of each place.
func runCommands(trueBin string, places []runPlace, binaries []string) [][]string {
	commands := [][]string{{trueBin}}
	for _, p := range places {
		for i, b := range binaries {
			commands = append(commands, []string{b, "run", filepath.Join(p.dirs[i], "phases.yaml")})
		}
	}
	return commands
}

// runFigure prints the run figure's turns: /bin/true's times, then each
// place's, each binary's overhead over /bin/true's p50.
func runFigure(t turns, trueBin string, places []runPlace, binaries int) {
	s := t.wall
	fmt.Printf("   %-44s p50 %-9v p90 %-9v                       CPU p50 %-9v faults p50 %d\n", trueBin, pct(s[0], 50), pct(s[0], 90),
		pct(t.cpu[0], 50), t.faults[0][len(t.faults[0])/2])
	for i, p := range places {
		for j := range binaries {
			c, label := 1+i*binaries+j, p.label
			if j > 0 {
				label = "  the other pipeline"
			}
			fmt.Printf("   %-44s p50 %-9v p90 %-9v overhead p50 %-9v CPU p50 %-9v faults p50 %d\n", label, pct(s[c], 50), pct(s[c], 90),
				pct(s[c], 50)-pct(s[0], 50), pct(t.cpu[c], 50), t.faults[c][len(t.faults[c])/2])
		}
	}
	fmt.Printf("   (goal: an overhead within 5ms; load %s)\n", loadAverage())
}

// versionCommands are cobra --version, pipeline --version, pipeline
// version and, when there is one, the other pipeline's --version.
// pipeline --version is answered before cobra is set up (see
// printVersion in cmd/pipeline), while cobra alone prints its version
// through its template; pipeline version goes through cobra's command
// tree as every other command does, so it is the fairer peer of cobra's
// start-up, and both are printed.
func versionCommands(cobra, pipeline, against string) [][]string {
	commands := [][]string{{cobra, "--version"}, {pipeline, "--version"}, {pipeline, "version"}}
	if against != "" {
		commands = append(commands, []string{against, "--version"})
	}
	return commands
}

// versionFigure prints the times of cobra --version and pipeline
// --version (and the other pipeline's) and their ratios.
func versionFigure(t turns) {
	s := t.wall
	fmt.Printf("      cobra alone --version   p50 %-9v p90 %-9v                            CPU p50 %-9v faults p50 %d\n",
		pct(s[0], 50), pct(s[0], 90), pct(t.cpu[0], 50), t.faults[0][len(t.faults[0])/2])
	for i, label := range []string{"pipeline --version", "pipeline version", "the other --version"}[:len(s)-1] {
		w := s[i+1]
		fmt.Printf("      %-23s p50 %-9v p90 %-9v ratio p50 %.2f×, p90 %.2f×   CPU p50 %-9v faults p50 %d\n", label, pct(w, 50), pct(w, 90),
			ratio(pct(w, 50), pct(s[0], 50)), ratio(pct(w, 90), pct(s[0], 90)), pct(t.cpu[i+1], 50), t.faults[i+1][len(t.faults[i+1])/2])
	}
	fmt.Printf("      (goal: within 1.5×; load %s)\n", loadAverage())
}

// writtenCopy copies a binary into work by one write(2) and returns the
// copy, its pages in the cache in 2 MiB folios (see stateWritten).
func writtenCopy(work, path string) string {
	content, err := os.ReadFile(path)
	check(err)
	f, err := os.CreateTemp(work, filepath.Base(path)+"-copy-")
	check(err)
	_, err = f.Write(content)
	check(errors.Join(err, f.Chmod(0o755), f.Close()))
	return f.Name()
}

// cpCopy copies a binary into work with cp(1) and returns the copy, its
// pages in the cache as cp left them (see stateCopied).
func cpCopy(work, path string) string {
	f, err := os.CreateTemp(work, filepath.Base(path)+"-cp-")
	check(err)
	check(errors.Join(f.Chmod(0o755), f.Close()))
	if out, err := exec.Command("cp", path, f.Name()).CombinedOutput(); err != nil {
		check(fmt.Errorf("cp %s: %v\n%s", path, err, out))
	}
	return f.Name()
}

// runPlace is a kind of folder where the run figure runs pipeline: one
// folder of that kind for each binary measured, so that each has a store
// of its own. (On ext4 without a journal, making an inode costs time in
// proportion to the inodes freed lately near it: binaries that shared a
// store would slow each other's runs by what they delete.)
type runPlace struct {
	label   string
	dirs    []string
	cleanup func()
}

// runPlaces makes the folders of the run figure for binaries binaries: on
// work's disk and in memory (/dev/shm, where an fsync costs nothing), a
// folder as it is (no git work tree, or one that git ignores: one git
// process) and a git work tree of one commit (checkpoints at the start
// and at the end, a snapshot of the tree before the step and after it).
func runPlaces(work string, binaries int) []runPlace {
	var places []runPlace
	add := func(where, base string, cleanup func()) {
		label := where + ", no git work tree"
		if exec.Command("git", "-C", base, "rev-parse", "--is-inside-work-tree").Run() == nil {
			label = where + ", a folder git ignores"
		}
		plain := runPlace{label: label, cleanup: cleanup}
		tree := runPlace{label: where + ", a git work tree"}
		for i := range binaries {
			dir := filepath.Join(base, fmt.Sprint("startup-", i))
			check(os.MkdirAll(dir, 0o755))
			check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(startupYAML), 0o644))
			plain.dirs = append(plain.dirs, dir)
			tree.dirs = append(tree.dirs, filepath.Join(base, fmt.Sprint("startup-git-", i)))
			gitTree(tree.dirs[i])
		}
		places = append(places, plain, tree)
	}
	add("disk", work, nil)
	if info, err := os.Stat("/dev/shm"); err == nil && info.IsDir() && !strings.HasPrefix(work, "/dev/shm") {
		shm, err := os.MkdirTemp("/dev/shm", "pipeline-bench-")
		check(err)
		add("memory", shm, func() { os.RemoveAll(shm) })
	}
	return places
}

// gitTree makes dir a git repository of its own whose one commit holds
// phases.yaml and a .gitignore of the store, as a project's would.
func gitTree(dir string) {
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(startupYAML), 0o644))
	check(os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".pipeline/\n"), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.email=bench@localhost", "-c", "user.name=bench", "commit", "-qm", "start"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			check(fmt.Errorf("git %v: %v\n%s", args, err, out))
		}
	}
}

// buildCobraOnly builds cobraOnly into work, with the Go experiments
// pipeline (the binary it is compared with) was built with: make build
// builds it with the classic garbage collector (Makefile, LEAN_GC).
func buildCobraOnly(work, pipeline string) string {
	return buildHelper(work, "cobra-only", cobraOnly, builtWithExperiments(pipeline))
}

// builtWithExperiments is the GOEXPERIMENT the Go binary at path was
// built with, "" for the toolchain's defaults or a binary that says none.
func builtWithExperiments(path string) string {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, setting := range info.Settings {
		if setting.Key == "GOEXPERIMENT" {
			return setting.Value
		}
	}
	return ""
}

// buildHelper writes the Go program source into a folder of this module
// (for its go.mod and go.sum; a leading _ keeps it out of ./...), builds
// it into work as make build builds pipeline (CGO_ENABLED=0, with the
// given GOEXPERIMENT) and removes the source.
func buildHelper(work, name, source, experiments string) string {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	check(err)
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	check(os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	src, err := os.MkdirTemp(filepath.Join(root, "bin"), "_"+name+"-")
	check(err)
	defer os.RemoveAll(src)
	check(os.WriteFile(filepath.Join(src, "main.go"), []byte(source), 0o644))
	out := filepath.Join(work, name)
	build := exec.Command("go", "build", "-o", out, "./"+filepath.Join("bin", filepath.Base(src)))
	build.Dir, build.Stderr = root, os.Stderr
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOEXPERIMENT="+experiments)
	check(build.Run())
	return out
}

// sideBySide runs each command once per round, in turn, so that a change
// of the machine's load weighs on each alike; it returns each one's
// times, sorted. Every run must exit 0. The programs' cached pages are
// dropped first, and each runs once untimed, so that each is read into
// the cache the same way.
func sideBySide(runs int, commands ...[]string) turns {
	for _, args := range commands {
		dropCached(args[0])
	}
	return inTurns(runs, commands...)
}

// turns are the runs of commands in turns: for each command, its wall
// times, its CPU times (user and system, its children's included) and
// its minor page faults, each sorted. The CPU time and the faults move
// less with the machine's load than the wall time does. first is each
// command's first run, untimed in the figures (after sideBySide's drop,
// the one that read the program from disk).
type turns struct {
	wall, cpu [][]time.Duration
	faults    [][]int64
	first     []time.Duration
}

// inTurns is sideBySide without dropping the programs' cached pages.
// Each turn runs the commands in an order of its own (shuffled, the same
// for every bench run): in a fixed order, the one that always ran second
// of two identical binaries measured 0.2-0.35 ms faster than the first
// (pipeline run of one true step, this machine), a bias that an
// interleaved order spreads over all of them.
func inTurns(runs int, commands ...[]string) turns {
	t := turns{wall: make([][]time.Duration, len(commands)), cpu: make([][]time.Duration, len(commands)),
		faults: make([][]int64, len(commands))}
	for _, args := range commands {
		d, _, err := timed(exec.Command(args[0], args[1:]...))
		if err != nil {
			check(fmt.Errorf("%s: %w", strings.Join(args, " "), err))
		}
		t.first = append(t.first, d)
	}
	shuffle := rand.New(rand.NewPCG(1, uint64(len(commands))))
	for range runs {
		for _, c := range shuffle.Perm(len(commands)) {
			args := commands[c]
			cmd := exec.Command(args[0], args[1:]...)
			d, _, err := timed(cmd)
			if err != nil {
				check(fmt.Errorf("%s: %w", strings.Join(args, " "), err))
			}
			t.wall[c] = append(t.wall[c], d)
			cpu, faults := usage(cmd)
			t.cpu[c], t.faults[c] = append(t.cpu[c], cpu), append(t.faults[c], faults)
		}
	}
	for c := range commands {
		sort.Slice(t.wall[c], func(i, j int) bool { return t.wall[c][i] < t.wall[c][j] })
		sort.Slice(t.cpu[c], func(i, j int) bool { return t.cpu[c][i] < t.cpu[c][j] })
		sort.Slice(t.faults[c], func(i, j int) bool { return t.faults[c][i] < t.faults[c][j] })
	}
	return t
}

// usage is the CPU time and the minor page faults of a process that has
// exited, its waited-for children's included.
func usage(cmd *exec.Cmd) (time.Duration, int64) {
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

const startupYAML = `version: 1
phases: [{name: one, steps: [{run: "true"}]}]
`
