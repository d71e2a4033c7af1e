package spec

import (
	"net"
	"testing"
)

// splitPort stands in for net.SplitHostPort: it accepts and refuses what
// that does, and finds the same port.
func TestSplitPortReadsAsNetDoes(t *testing.T) {
	for _, address := range []string{"127.0.0.1:7233", "localhost:7233", "temporal:", ":7233", "[::1]:7233", "[::1]:",
		"", "localhost", "::1:7233", "[::1]", "[::1]x:7233", "[::1]:72:33", "[::1:7233", "a[b]:7233", "a]:7233",
		"[a]b]:7233", "[[a]:7233", "host:port", " 127.0.0.1:7233", "[fe80::1%eth0]:7233", ":", "[]:"} {
		_, wantPort, err := net.SplitHostPort(address)
		port, ok := splitPort(address)
		if ok != (err == nil) || (ok && port != wantPort) {
			t.Errorf("splitPort(%q) = %q, %v; net.SplitHostPort: %q, %v", address, port, ok, wantPort, err)
		}
	}
}
