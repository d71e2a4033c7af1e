package search

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// TimesEnv, set to anything, makes a search print how long each of its
// parts took on standard error, in one line: what a query through the
// binary spends where, without a profiler.
const TimesEnv = "PIPELINE_SEARCH_TIMES"

// partTimes times the parts of one search, when TimesEnv asks.
type partTimes struct {
	on    bool
	last  time.Time
	parts []string
}

func newPartTimes() *partTimes {
	return &partTimes{on: os.Getenv(TimesEnv) != "", last: time.Now()}
}

// done ends the part named.
func (t *partTimes) done(part string) {
	if t == nil || !t.on {
		return
	}
	now := time.Now()
	t.parts = append(t.parts, fmt.Sprintf("%s %.2f ms", part, float64(now.Sub(t.last).Microseconds())/1000))
	t.last = now
}

func (t *partTimes) print() {
	if t != nil && t.on {
		fmt.Fprintf(os.Stderr, "pipeline: search times: %s\n", strings.Join(t.parts, ", "))
	}
}
