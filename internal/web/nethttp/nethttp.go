// Package nethttp is package web's Client with net/http, in process. It
// registers itself on import (web.Use): the full build (pipeline-temporal)
// and the tests that post in process import it.
package nethttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"time"

	"github.com/pipeline-dev/pipeline/internal/web"
)

func init() { web.Use(Client{HTTP: &http.Client{}}) }

// Client posts with HTTP.
type Client struct{ HTTP *http.Client }

// Post sends r; an error leaves out the URL (a webhook's is its secret).
func (c Client) Post(ctx context.Context, r web.Request) (web.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return web.Response{}, withoutURL(err)
	}
	for _, h := range r.Header {
		req.Header.Set(h[0], h[1])
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return web.Response{}, withoutURL(err)
	}
	defer resp.Body.Close()
	kept, _ := io.ReadAll(io.LimitReader(resp.Body, r.Keep))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return web.Response{StatusCode: resp.StatusCode, Status: resp.Status, Body: kept}, nil
}

// withoutURL is err less the *url.Error around it, which repeats the URL.
func withoutURL(err error) error {
	var urlErr *neturl.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

// Refuse answers every request on 127.0.0.1 with HTTP 400 and body.
func (Client) Refuse(body string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	server := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, body)
	})}
	go server.Serve(l)
	return l.Addr().String(), func() { server.Close() }, nil
}
