package main

// The throughput figure beside an earlier build (-throughput-against):
// tee, pipeline run and the earlier pipeline run in turns, each with its
// wall time and its CPU time. The CPU time is the user and system time of
// every process of the run, the producer's included (the rusage of the
// child, which holds its waited-for children's): on a shared machine the
// load moves it far less than the wall time, so a cut shows there first.

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

var (
	throughputAgainst = flag.String("throughput-against", "", "measure only the throughput figure, with another pipeline binary (an earlier build) in the same turns, and the CPU seconds per GB of each")
	throughputRounds  = flag.Int("throughput-rounds", 5, "turns of the -throughput-against figure")
)

// flood is one subject of the throughput figure and its runs.
type flood struct {
	name string
	run  func() (wall, cpu time.Duration)
	wall []time.Duration
	cpu  []time.Duration
}

func throughputAgainstFigures(pipeline, against, self, work string, size int64, rounds int) {
	fmt.Printf("1. throughput: %s of 100-byte lines, tee, pipeline run and an earlier build in turns (%d turns)\n", human(size), rounds)
	loadLine("before")
	dir := filepath.Join(work, "throughput")
	check(os.MkdirAll(dir, 0o755))
	subjects := []*flood{
		{name: "PRODUCER | tee FILE (shown)", run: func() (time.Duration, time.Duration) { return teeRun(self, dir, size) }},
		{name: "pipeline run", run: func() (time.Duration, time.Duration) { return floodRun(pipeline, self, dir, size) }},
		{name: "earlier build", run: func() (time.Duration, time.Duration) { return floodRun(against, self, dir, size) }},
	}
	for range rounds {
		for _, s := range subjects {
			wall, cpu := s.run()
			s.wall, s.cpu = append(s.wall, wall), append(s.cpu, cpu)
		}
	}
	gb := float64(size) / 1e9
	teeRate := float64(size) / slices.Min(subjects[0].wall).Seconds()
	for _, s := range subjects {
		best := slices.Min(s.wall)
		rate := float64(size) / best.Seconds()
		slices.Sort(s.cpu)
		fmt.Printf("   %-28s %8.1f MB/s  %5.1f %% of tee  (%v, best of %d); CPU %.2f s/GB (median; best %.2f)\n",
			s.name, rate/1e6, 100*rate/teeRate, best.Round(time.Millisecond), rounds,
			s.cpu[len(s.cpu)/2].Seconds()/gb, s.cpu[0].Seconds()/gb)
	}
	loadLine("after")
	fmt.Println()
}

// teeRun is PRODUCER | tee FILE, its output to /dev/null or a pipe.
func teeRun(self, dir string, size int64) (wall, cpu time.Duration) {
	sink := ">/dev/null"
	if toPipe {
		sink = "| cat >/dev/null"
	}
	out := filepath.Join(dir, "tee.out")
	defer os.Remove(out)
	return cpuTimed(exec.Command("sh", "-c", fmt.Sprintf("%q -produce %d | tee %q %s", self, size, out, sink)))
}

// floodRun is runFlood's run, timed in wall and CPU time.
func floodRun(pipeline, self, dir string, size int64) (wall, cpu time.Duration) {
	wall, cpu = cpuTimed(floodCommand(pipeline, self, dir, size))
	checkFloodTranscript(pipeline, dir, size)
	return wall, cpu
}

// pipeSink drains a child's output through a pipe: it is no *os.File, so
// exec gives the child a pipe.
type pipeSink struct{}

func (pipeSink) Write(p []byte) (int, error) { return len(p), nil }

// cpuTimed runs cmd and returns its wall time and the CPU time of it and
// its waited-for children.
func cpuTimed(cmd *exec.Cmd) (wall, cpu time.Duration) {
	start := time.Now()
	check(cmd.Run())
	wall = time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
