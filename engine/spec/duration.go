package spec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a length of time written as Go writes durations (90s, 1h30m),
// with d for days allowed as well (7d, 1d12h). Zero means no limit.
type Duration time.Duration

// ParseDuration reads a Duration.
func ParseDuration(text string) (Duration, error) {
	text = strings.TrimSpace(text)
	var days time.Duration
	if i := strings.IndexByte(text, 'd'); i > 0 {
		n, err := strconv.Atoi(text[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration", text)
		}
		days = time.Duration(n) * 24 * time.Hour
		text = text[i+1:]
		if text == "" {
			return Duration(days), nil
		}
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", text)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", text)
	}
	return Duration(days + d), nil
}

func (d Duration) String() string {
	if d == 0 {
		return "none"
	}
	td := time.Duration(d)
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
