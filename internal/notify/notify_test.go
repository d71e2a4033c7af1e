package notify

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
	_ "github.com/pipeline-dev/pipeline/internal/web/nethttp" // posts in process
)

// A webhook that cannot be reached is named by its host alone: the rest
// of its URL (Slack's /services/T…/B…/X…) is its secret.
func TestAFailedPostKeepsTheURLsSecret(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	secret := "services/T000/B000/very-secret-token"
	err = Post(context.Background(), spec.Webhook{URL: "${HOOK}", Format: spec.FormatSlack},
		Message{Event: "paused", Title: "t", Text: "x"}, func(string) string { return "http://" + addr + "/" + secret })
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "http://"+addr) {
		t.Errorf("error %v: want the host, not the path", err)
	}
}
