package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// exitHelper is a Go program built as make build builds pipeline: it
// locks EXIT_THREADS goroutines to threads of their own (asleep in a
// futex, as a Go program's idle threads are), writes to EXIT_KB KiB of
// fresh heap, maps the file EXIT_MAP (when set) and reads a byte of each
// of its pages, then stores the monotonic clock into the
// first 8 bytes of EXIT_STAMP (a shared mapping: no system call after
// the stamp) and exits.
const exitHelper = `package main

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

var touched []byte

func main() {
	threads, _ := strconv.Atoi(os.Getenv("EXIT_THREADS"))
	kb, _ := strconv.Atoi(os.Getenv("EXIT_KB"))
	var ready sync.WaitGroup
	for range threads {
		ready.Add(1)
		go func() {
			runtime.LockOSThread()
			ready.Done()
			select {}
		}()
	}
	ready.Wait()
	touched = make([]byte, kb<<10)
	for i := 0; i < len(touched); i += 4096 {
		touched[i] = 1
	}
	if path := os.Getenv("EXIT_MAP"); path != "" {
		mapRead(path)
	}
	f, err := os.OpenFile(os.Getenv("EXIT_STAMP"), os.O_RDWR, 0)
	if err != nil {
		os.Exit(1)
	}
	page, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		os.Exit(1)
	}
	var now unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
	atomic.StoreInt64((*int64)(unsafe.Pointer(&page[0])), now.Nano())
	os.Exit(0)
}

var sum byte

func mapRead(path string) {
	f, err := os.Open(path)
	if err != nil {
		os.Exit(1)
	}
	info, err := f.Stat()
	if err != nil {
		os.Exit(1)
	}
	mapped, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		os.Exit(1)
	}
	for i := 0; i < len(mapped); i += 4096 {
		sum += mapped[i]
	}
}
`

// exitShape is what the helper holds when it exits: threads locked,
// KiB of heap written, a file mapped and read.
type exitShape struct {
	threads, kb int
	mapped      string
}

// held is what a process holds at its exit: its threads, its anonymous
// memory and its file pages mapped (KiB).
type held struct{ threads, anonKB, fileKB int }

// exitCostFigures times the helper's exit for each shape, in turns, and
// gives the cost of a thread, of a MiB of memory written and of a MiB of
// pipeline's binary mapped in each state of its pages in the cache; then
// what pipeline run of one true step, pipeline --version and a cobra-only
// binary hold when they exit. (What the helper holds is read after its
// timed runs: the (a) copy is read in by the first of those.)
func exitCostFigures(pipeline, work string, runs int) {
	fmt.Printf("pipeline bench -exitcost: %d cores, %d runs of each in turns, files in %s\n", numCPU(), runs, work)
	helper := buildHelper(work, "exit-helper", exitHelper, builtWithExperiments(pipeline))
	// pipeline's binary mapped and read whole, its pages in the cache in
	// 2 MiB folios (b: written by one write(2)) and in 4 KiB folios (a:
	// read in by the helper's faults, as exec reads a binary in).
	readIn := writtenCopy(work, pipeline)
	dropCached(readIn)
	shapes := []exitShape{{0, 0, ""}, {4, 0, ""}, {8, 0, ""}, {0, 1024, ""}, {0, 4096, ""},
		{0, 0, writtenCopy(work, pipeline)}, {0, 0, readIn}}
	labels := []string{"", "", "", "", "", ", pipeline's binary (b)", ", pipeline's binary (a)"}
	holding := make([]held, len(shapes))
	exitStamp(work)
	loadLine("before")
	times := exitTimes(helper, work, shapes, runs)
	loadLine("after")
	for i, shape := range shapes {
		holding[i] = tracedExit(work, shape.env(work), []string{helper})
	}
	for i, h := range holding {
		t := times[i]
		fmt.Printf("   exit of a Go program holding %2d threads, %4d KiB of anonymous memory, %5d KiB of files mapped%s: p50 %4.0f µs (p25 %4.0f, p75 %4.0f)\n",
			h.threads, h.anonKB, h.fileKB, labels[i], centile(t, 50), centile(t, 25), centile(t, 75))
	}
	more := func(i int, of int) float64 { return (centile(times[i], 50) - centile(times[0], 50)) / float64(of) }
	fmt.Printf("   a thread more: %+.1f µs; a MiB more of anonymous memory: %+.0f µs; of pipeline's binary mapped, (b) %+.1f µs, (a) %+.1f µs\n",
		more(2, holding[2].threads-holding[0].threads), 1024*more(4, holding[4].anonKB-holding[0].anonKB),
		1024*more(5, holding[5].fileKB-holding[0].fileKB), 1024*more(6, holding[6].fileKB-holding[0].fileKB))
	heldAtExit(pipeline, work, min(runs, 50))
}

// env is the helper's environment for the shape, its stamp in work.
func (shape exitShape) env(work string) []string {
	return append(os.Environ(), fmt.Sprintf("EXIT_THREADS=%d", shape.threads),
		fmt.Sprintf("EXIT_KB=%d", shape.kb), "EXIT_MAP="+shape.mapped, "EXIT_STAMP="+filepath.Join(work, "exit-stamp"))
}

// exitStamp makes the helper's stamp in work, zero, and gives its path.
func exitStamp(work string) string {
	stamp := filepath.Join(work, "exit-stamp")
	check(os.WriteFile(stamp, make([]byte, 4096), 0o644))
	return stamp
}

// exitTimes runs the helper runs times for each shape, in turns, and
// gives for each the times from its stamp to Wait returning, sorted.
func exitTimes(helper, work string, shapes []exitShape, runs int) [][]float64 {
	times := make([][]float64, len(shapes))
	for round := range runs + 1 {
		for i, shape := range shapes {
			stamp := exitStamp(work)
			cmd := exec.Command(helper)
			cmd.Env = shape.env(work)
			check(cmd.Run())
			waited := monotonicNow()
			content, err := os.ReadFile(stamp)
			check(err)
			exited := int64(binary.LittleEndian.Uint64(content))
			if exited == 0 {
				check(fmt.Errorf("%s left no stamp", helper))
			}
			if round > 0 { // the first round reads the program into the cache
				times[i] = append(times[i], float64(waited-exited)/1e3)
			}
		}
	}
	for i := range times {
		slices.Sort(times[i])
	}
	return times
}

// heldAtExit gives the median threads, anonymous memory (RssAnon) and
// file pages mapped (RssFile) pipeline run of one true step, pipeline
// --version and a cobra-only binary hold as they exit, each binary in
// the cache as make build leaves it (b), and the run's binary also read
// in by exec (a): how many pages a fault maps depends on it.
func heldAtExit(pipeline, work string, runs int) {
	dir := filepath.Join(work, "exitcost-run")
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(startupYAML), 0o644))
	readIn := writtenCopy(work, pipeline)
	dropCached(readIn)
	pipeline = writtenCopy(work, pipeline)
	cobra := writtenCopy(work, buildCobraOnly(work, pipeline))
	commands := [][]string{{pipeline, "run", "phases.yaml"}, {readIn, "run", "phases.yaml"}, {pipeline, "--version"}, {cobra, "--version"}}
	labels := []string{" (b)", " (a)", "", ""}
	counts := make([][3][]int, len(commands))
	for range runs {
		for i, command := range commands {
			h := tracedExit(dir, os.Environ(), command)
			for j, n := range []int{h.threads, h.anonKB, h.fileKB} {
				counts[i][j] = append(counts[i][j], n)
			}
		}
	}
	for i, command := range commands {
		for j := range counts[i] {
			slices.Sort(counts[i][j])
		}
		name := strings.SplitN(filepath.Base(command[0]), "-copy-", 2)[0]
		fmt.Printf("   at its exit %-34s holds p50 %d threads, %d KiB of anonymous memory, %d KiB of files mapped\n",
			name+" "+strings.Join(command[1:], " ")+labels[i], median(counts[i][0]), median(counts[i][1]), median(counts[i][2]))
	}
	check(os.RemoveAll(dir))
}

// tracedExit runs command in dir with env under ptrace, stopped as its
// threads exit (PTRACE_O_TRACEEXIT: the memory is all there until the
// last one), and reads what it holds at the first such stop.
func tracedExit(dir string, env, command []string) (h held) {
	runtime.LockOSThread() // ptrace answers only the thread that attached
	defer runtime.UnlockOSThread()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir, cmd.Env, cmd.SysProcAttr = dir, env, &syscall.SysProcAttr{Ptrace: true}
	check(cmd.Start())
	pid := cmd.Process.Pid
	var status syscall.WaitStatus
	_, err := syscall.Wait4(pid, &status, syscall.WALL, nil) // stopped at its exec
	check(err)
	check(syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXIT|syscall.PTRACE_O_TRACECLONE|unix.PTRACE_O_EXITKILL))
	check(syscall.PtraceCont(pid, 0))
	for {
		tid, err := syscall.Wait4(-1, &status, syscall.WALL, nil)
		check(err)
		if tid == pid && (status.Exited() || status.Signaled()) {
			if status.ExitStatus() != 0 {
				check(fmt.Errorf("%s: %v", strings.Join(command, " "), status))
			}
			return h
		}
		if !status.Stopped() {
			continue
		}
		pass := status.StopSignal()
		if pass == syscall.SIGTRAP && status.TrapCause() == syscall.PTRACE_EVENT_EXIT && h.threads == 0 {
			h = held{procStatus(pid, "Threads:"), procStatus(pid, "RssAnon:"), procStatus(pid, "RssFile:")}
		}
		if pass == syscall.SIGTRAP || pass == syscall.SIGSTOP { // ptrace's own stops
			pass = 0
		}
		_ = syscall.PtraceCont(tid, int(pass)) // fails for a thread killed meanwhile
	}
}

// procStatus is the number on the line of /proc/pid/status that starts
// with field.
func procStatus(pid int, field string) int {
	content, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for line := range strings.Lines(string(content)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			n, err := strconv.Atoi(strings.Fields(rest)[0])
			check(err)
			return n
		}
	}
	check(fmt.Errorf("no %s in /proc/%d/status", field, pid))
	return 0
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, the helper's clock.
func monotonicNow() int64 {
	var now unix.Timespec
	check(unix.ClockGettime(unix.CLOCK_MONOTONIC, &now))
	return now.Nano()
}
