package filewatch

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// inotify's limits are said as such, not as a full disk or too many
// open files (their errnos).
func TestWatchErrorNamesInotifyLimits(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{syscall.ENOSPC: "max_user_watches", syscall.EMFILE: "max_user_instances"} {
		err := watchError("/src", errno)
		if !strings.Contains(err.Error(), want) || errors.Is(err, errno) {
			t.Errorf("%v: %v; want %s named, and not the errno", errno, err, want)
		}
	}
}
