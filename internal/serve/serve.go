// Package serve is what pipeline's servers (mcp --http, ui) share: the
// check that an address is a loopback one, and serving HTTP until the
// command is stopped.
package serve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Loopback tells whether addr (HOST:PORT) names a loopback address, or
// localhost; the error says that addr is not HOST:PORT.
func Loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback()), nil
}

// HTTP serves h on ln until ctx ends, then shuts the server down,
// allowing 5 s for the requests under way; beforeShutdown (when not nil)
// runs first, to end what Shutdown would wait for (event streams).
func HTTP(ctx context.Context, ln net.Listener, h http.Handler, beforeShutdown func()) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		if beforeShutdown != nil {
			beforeShutdown()
		}
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shutdown)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
