package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
)

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8642": true, "[::1]:0": true, "localhost:80": true, "127.1.2.3:9": true,
		"0.0.0.0:8642": false, "192.168.1.2:80": false, "example.com:80": false, ":8642": false,
	} {
		if got, err := Loopback(addr); err != nil || got != want {
			t.Errorf("Loopback(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
	if _, err := Loopback("127.0.0.1"); err == nil {
		t.Error("an address without a port is taken")
	}
}

// HTTP answers until its context ends, runs beforeShutdown, and returns
// nil once the server is closed.
func TestHTTPServesUntilItsContextEnds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopping := make(chan struct{})
	served := make(chan error, 1)
	go func() {
		served <- HTTP(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }),
			func() { close(stopping) })
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("answered %q", body)
	}
	cancel()
	<-stopping
	if err := <-served; err != nil {
		t.Errorf("HTTP returned %v after its context ended", err)
	}
}
