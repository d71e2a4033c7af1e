package search

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// TimesEnv, set to anything, makes a search print how long each of its
// parts took on standard error, in one line (wall time, then the
// process's CPU time): what a query through the binary spends where,
// without a profiler.
const TimesEnv = "PIPELINE_SEARCH_TIMES"

// partTimes times the parts of one search, when TimesEnv asks.
type partTimes struct {
	on        bool
	last      time.Time
	lastCPU   time.Duration
	parts     []string
	startCPU  time.Duration
	startWall time.Time
}

func newPartTimes() *partTimes {
	t := &partTimes{on: os.Getenv(TimesEnv) != ""}
	if t.on {
		t.last, t.lastCPU = time.Now(), processCPU()
		t.startWall, t.startCPU = t.last, t.lastCPU
	}
	return t
}

// done ends the part named.
func (t *partTimes) done(part string) {
	if t == nil || !t.on {
		return
	}
	now, cpu := time.Now(), processCPU()
	t.parts = append(t.parts, fmt.Sprintf("%s %s/%s", part, msec(now.Sub(t.last)), msec(cpu-t.lastCPU)))
	t.last, t.lastCPU = now, cpu
}

func (t *partTimes) print() {
	if t != nil && t.on {
		fmt.Fprintf(os.Stderr, "pipeline: search times (wall/CPU, ms): before the search %s CPU; %s\n",
			msec(t.startCPU), strings.Join(t.parts, ", "))
	}
}

func msec(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

// processCPU is the process's CPU time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
