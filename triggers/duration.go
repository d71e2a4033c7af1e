package triggers

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/internal/lazy"
)

// ParseDuration reads a duration written as Go writes them (90s, 1h30m),
// with d for days allowed as well (7d, 1d12h). Negative durations are
// refused: every duration in a pipeline is a length of time. So is one too
// long to count in nanoseconds (about 292 years), which time.Duration
// would otherwise wrap around to a negative or small one.
func ParseDuration(written string) (time.Duration, error) {
	text := strings.TrimSpace(written)
	if rest, negative := strings.CutPrefix(text, "-"); negative {
		d, err := ParseDuration(rest)
		switch {
		case err != nil:
			return 0, fmt.Errorf("%q is not a duration", text)
		case d > 0:
			return 0, fmt.Errorf("%q is negative", text)
		}
		return 0, nil
	}
	if tooLong(text) {
		return 0, fmt.Errorf("%q is too long: a duration is at most %dd, about 292 years", text, longestDays)
	}
	var days time.Duration
	rest := text
	if i := strings.IndexByte(text, 'd'); i > 0 {
		n, err := strconv.Atoi(text[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration", text)
		}
		days = time.Duration(n) * 24 * time.Hour
		rest = text[i+1:]
		if rest == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", text)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", text)
	}
	return days + d, nil
}

// longestDays is the most whole days a time.Duration holds.
const longestDays = math.MaxInt64 / int64(24*time.Hour)

// durationText is a duration as written: numbers, each with a unit.
var durationText = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp {
	return regexp.MustCompile(`^[+]?(([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h|d))+$`)
}}

// durationPart is one number and its unit.
var durationPart = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp {
	return regexp.MustCompile(`([0-9]+\.?[0-9]*|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h|d)`)
}}

// unitNanoseconds is the nanoseconds of a unit that durationPart matched.
func unitNanoseconds(unit string) float64 {
	switch unit {
	case "ns":
		return 1
	case "us", "µs", "μs":
		return 1e3
	case "ms":
		return 1e6
	case "s":
		return 1e9
	case "m":
		return 60e9
	case "h":
		return 3600e9
	}
	return 86400e9 // d
}

// tooLong reports whether a well-formed duration adds up to more
// nanoseconds than a time.Duration holds.
func tooLong(text string) bool {
	if !durationText.Get().MatchString(text) {
		return false
	}
	total := 0.0
	for _, part := range durationPart.Get().FindAllStringSubmatch(text, -1) {
		n, err := strconv.ParseFloat(part[1], 64)
		if err != nil {
			return false
		}
		total += n * unitNanoseconds(part[2])
	}
	return total >= math.MaxInt64
}

// FormatDuration writes d the way ParseDuration reads it, shortest first:
// 7d, 2h, 1h30m, 90s; "none" for zero.
func FormatDuration(td time.Duration) string {
	if td == 0 {
		return "none"
	}
	if td%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", td/(24*time.Hour))
	}
	s := td.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
