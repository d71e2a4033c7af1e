//go:build temporal

package fleet

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/api/serviceerror"
)

// TestBusyRetryWaitsOutABusyServer: a list that timed out on a busy
// server is asked again until it answers; any other error is returned
// at once.
func TestBusyRetryWaitsOutABusyServer(t *testing.T) {
	calls := 0
	got, err := busyRetry(context.Background(), func() (int, error) {
		calls++
		if calls < 3 {
			return 0, serviceerror.NewDeadlineExceeded("busy")
		}
		return 42, nil
	})
	if err != nil || got != 42 || calls != 3 {
		t.Fatalf("got %d, %v after %d calls; want 42 after 3", got, err, calls)
	}
	calls = 0
	refused := serviceerror.NewPermissionDenied("no", "")
	_, err = busyRetry(context.Background(), func() (int, error) {
		calls++
		return 0, refused
	})
	if !errors.Is(err, refused) || calls != 1 {
		t.Fatalf("a refusal: %v after %d calls; want it at once", err, calls)
	}
}
