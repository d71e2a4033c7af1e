package triggers

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration written as Go writes them (90s, 1h30m),
// with d for days allowed as well (7d, 1d12h). Negative durations are
// refused: every duration in a pipeline is a length of time.
func ParseDuration(written string) (time.Duration, error) {
	text := strings.TrimSpace(written)
	var days time.Duration
	if i := strings.IndexByte(text, 'd'); i > 0 {
		n, err := strconv.Atoi(text[:i])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration", strings.TrimSpace(written))
		}
		days = time.Duration(n) * 24 * time.Hour
		text = text[i+1:]
		if text == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", strings.TrimSpace(written))
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", strings.TrimSpace(written))
	}
	return days + d, nil
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
