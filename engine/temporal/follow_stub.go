package temporal

import (
	"context"
	"io"
)

// FollowOutput writes to w what the session's running steps print from now on, as the workers report it (a bounded tail per heartbeat), and a line "exited N after T" at each step's end, until ctx ends or the session stops running (paused, completed, failed).
//
// stub: replaced by follow.go at merge. It writes nothing and returns
// when ctx ends.
func (c *Client) FollowOutput(ctx context.Context, id string, w io.Writer) error {
	<-ctx.Done()
	return nil
}
