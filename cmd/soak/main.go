// Command soak kills pipeline with kill -9 at random instants, over and
// over, resuming the session after each kill, and checks after every kill
// that no file of the store is corrupt, that nothing recorded before the
// kill was lost, and that no process a step started outlived the run that
// started it. It is make soak: minutes long, not part of make test.
//
// Each round: a run (a new session every tenth round, else the paused or
// interrupted one), killed at a random instant in its first 200 ms; every
// file checked; the event log kept; then pipeline resume to the end; the
// log must start with what it held at the kill (a torn last line aside);
// no marked process may be left.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// markVar is set in the environment of every pipeline the soak starts,
// and so of every process its steps start: once a run has ended, a live
// process that has it is a leftover.
const markVar = "PIPELINE_SOAK_MARK"

const phasesYAML = `version: 1
name: soak
defaults:
  retry: {when: "false"}
phases:
  - name: one
    steps:
      - run: 'for i in 1 2 3 4 5 6 7 8; do echo "one $i"; done; sleep 0.03; echo done'
      - name: child
        run: '(sleep 30 &); echo started child; sleep 0.05'
  - name: two
    steps:
      - run: 'i=0; while [ $i -lt 200 ]; do echo "line $i of a longer output"; i=$((i+1)); done'
  - name: three
    steps:
      - run: '(sleep 30 &); sleep 0.05; echo three'
`

type report struct {
	kills, inRun, corrupt, torn, lostBytes, leftovers, resumeFailures, runFailures int
	problems                                                                       []string
}

func (r *report) problem(format string, args ...any) {
	if len(r.problems) < 20 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

func main() {
	var (
		binary = flag.String("pipeline", "bin/pipeline", "the pipeline binary")
		kills  = flag.Int("kills", 1000, "how many kill -9s")
		seed   = flag.Uint64("seed", uint64(time.Now().UnixNano()), "random seed")
		window = flag.Duration("window", 200*time.Millisecond, "kills fall in this much of a run's start")
	)
	flag.Parse()
	bin, err := filepath.Abs(*binary)
	check(err)
	dir, err := os.MkdirTemp("", "pipeline-soak-")
	check(err)
	check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(phasesYAML), 0o644))
	rng := rand.New(rand.NewPCG(*seed, 2))
	mark := markVar + "=" + dir
	selfCheck(mark)
	fmt.Printf("soak: %s, %d kills, seed %d, folder %s\n", bin, *kills, *seed, dir)
	var r report
	start := time.Now()
	for i := 0; i < *kills; i++ {
		args := []string{"run"}
		if i%10 == 0 {
			args = append(args, "--new")
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CI=true", mark)
		var output bytes.Buffer
		cmd.Stdout, cmd.Stderr = &output, &output
		check(cmd.Start())
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-time.After(time.Duration(rng.Int64N(int64(*window)))):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			r.inRun++
		case <-done: // the run ended before the kill came
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				r.runFailures++
				r.problem("round %d: run exited %d: %s", i, code, lastLine(output.Bytes()))
			}
		}
		r.kills++
		logs := checkStore(dir, &r)
		// Resume to the end: the log must keep what it held at the kill.
		resume := exec.Command(bin, "resume")
		resume.Dir = dir
		resume.Env = append(os.Environ(), "CI=true", mark)
		if out, err := resume.CombinedOutput(); err != nil && !strings.Contains(string(out), "nothing to resume") &&
			!strings.Contains(string(out), "no [paused running] session") {
			r.resumeFailures++
			r.problem("round %d: resume: %v: %s", i, err, lastLine(out))
		}
		for path, before := range logs {
			after, err := os.ReadFile(path)
			if err != nil {
				r.problem("round %d: %s after resume: %v", i, path, err)
				continue
			}
			if !bytes.HasPrefix(after, before) {
				lost := len(before) - commonPrefix(before, after)
				r.lostBytes += lost
				r.problem("round %d: %s lost %d bytes recorded before the kill", i, path, lost)
			}
		}
		checkStore(dir, &r)
		if pids := leftovers(mark); len(pids) > 0 {
			r.leftovers += len(pids)
			r.problem("round %d: %d processes of a step outlived their run", i, len(pids))
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if (i+1)%100 == 0 {
			fmt.Printf("  %d kills (%d inside a run), %s\n", i+1, r.inRun, time.Since(start).Round(time.Second))
		}
	}
	fmt.Printf("\nkills                %d (%d inside a run, %d after it ended)\n", r.kills, r.inRun, r.kills-r.inRun)
	fmt.Printf("corrupt files        %d\n", r.corrupt)
	fmt.Printf("torn last lines      %d (skipped on read, cut before the next append)\n", r.torn)
	fmt.Printf("lost bytes           %d\n", r.lostBytes)
	fmt.Printf("leftover processes   %d\n", r.leftovers)
	fmt.Printf("failed resumes       %d\n", r.resumeFailures)
	fmt.Printf("failed runs          %d (not killed, exit not 0)\n", r.runFailures)
	fmt.Printf("time                 %s\n", time.Since(start).Round(time.Second))
	for _, p := range r.problems {
		fmt.Println("  ", p)
	}
	if r.corrupt+r.lostBytes+r.leftovers+r.resumeFailures+r.runFailures > 0 {
		fmt.Printf("the store is kept for a look: %s\n", dir)
		os.Exit(1)
	}
	os.RemoveAll(dir)
}

// checkStore parses every file of the store and returns each event log's
// whole lines, by path.
func checkStore(dir string, r *report) map[string][]byte {
	root := filepath.Join(dir, ".pipeline")
	logs := map[string][]byte{}
	sessions, _ := filepath.Glob(filepath.Join(root, "sessions", "*"))
	for _, s := range sessions {
		if strings.HasPrefix(filepath.Base(s), ".") {
			continue // a session being made: never read
		}
		mustJSON(filepath.Join(s, "meta.json"), false, r)
		mustJSON(filepath.Join(s, "state.json"), true, r)
		path := filepath.Join(s, "events.jsonl")
		content, err := os.ReadFile(path)
		if err != nil {
			if !os.IsNotExist(err) {
				r.corrupt++
				r.problem("%s: %v", path, err)
			}
			continue
		}
		whole := content[:bytes.LastIndexByte(content, '\n')+1]
		if len(whole) != len(content) {
			r.torn++
		}
		sc := bufio.NewScanner(bytes.NewReader(whole))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for n := 1; sc.Scan(); n++ {
			if !json.Valid(sc.Bytes()) {
				r.corrupt++
				r.problem("%s line %d is not JSON: %.80q", path, n, sc.Bytes())
			}
		}
		logs[path] = whole
	}
	if index, err := os.ReadFile(filepath.Join(root, "index.tsv")); err == nil {
		lines := bytes.Split(index, []byte("\n"))
		for n, line := range lines[:len(lines)-1] {
			// 12 fields; a removed session's last line keeps format 1's 11.
			if fields := bytes.Split(line, []byte("\t")); len(fields) != 12 && !(len(fields) == 11 && string(fields[2]) == "removed") {
				r.corrupt++
				r.problem("index.tsv line %d is not an index line: %.80q", n+1, line)
			}
		}
	}
	return logs
}

func mustJSON(path string, optional bool, r *report) {
	content, err := os.ReadFile(path)
	if err != nil {
		if optional && os.IsNotExist(err) {
			return
		}
		r.corrupt++
		r.problem("%s: %v", path, err)
		return
	}
	if !json.Valid(content) {
		r.corrupt++
		r.problem("%s is not JSON (%d bytes)", path, len(content))
	}
}

// selfCheck makes sure leftovers finds a marked process: a soak that
// could not see one would report none.
func selfCheck(mark string) {
	probe := exec.Command("sleep", "30")
	probe.Env = append(os.Environ(), mark)
	check(probe.Start())
	found := leftovers(mark)
	probe.Process.Kill()
	probe.Wait()
	if len(found) != 1 || found[0] != probe.Process.Pid {
		check(fmt.Errorf("the leftover check found %v, not the probe %d", found, probe.Process.Pid))
	}
}

// leftovers lists the live processes whose environment holds mark.
func leftovers(mark string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		environ, err := os.ReadFile(p)
		if err != nil || zombie(filepath.Dir(p)) {
			continue
		}
		for _, kv := range bytes.Split(environ, []byte{0}) {
			if string(kv) == mark {
				var pid int
				fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func zombie(proc string) bool {
	stat, err := os.ReadFile(filepath.Join(proc, "stat"))
	if err != nil {
		return true
	}
	end := bytes.LastIndexByte(stat, ')')
	return end < 0 || bytes.HasPrefix(bytes.TrimSpace(stat[end+1:]), []byte("Z"))
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
}
