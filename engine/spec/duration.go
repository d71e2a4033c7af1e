package spec

import (
	"time"

	"github.com/pipeline-dev/pipeline/triggers"
)

// Duration is a length of time: 90s, 1h30m, 7d. Zero means no limit.
type Duration time.Duration

// ParseDuration reads a Duration as triggers.ParseDuration does.
func ParseDuration(text string) (Duration, error) {
	d, err := triggers.ParseDuration(text)
	return Duration(d), err
}

func (d Duration) String() string { return triggers.FormatDuration(time.Duration(d)) }
