// Package web is the HTTP a local run needs, without net/http: the POSTs
// of webhooks and of the OTLP export, and the listener that answers the
// gemini CLI with a refusal. net/http (with crypto/tls and x509) would
// add 36 package inits and 6 MB of binary to every start of the lean
// pipeline build for work that few runs do, so that build hands these to
// pipeline-temporal (package relay) and the full build does
// them in process (package nethttp, which registers itself on import).
package web

import (
	"context"
	"errors"
	"sync/atomic"
)

// Request is one POST.
type Request struct {
	URL string `json:"url"`
	// Header is each header's name and value, in order.
	Header [][2]string `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
	// Keep is how many bytes of the answer's body to keep; the rest is
	// read and dropped.
	Keep int64 `json:"keep,omitempty"`
}

// Response is the answer to a POST.
type Response struct {
	StatusCode int    `json:"status_code"`
	Status     string `json:"status"`
	Body       []byte `json:"body,omitempty"`
}

// Client does the HTTP of a process.
type Client interface {
	// Post sends r within ctx. Its error never repeats the URL, which
	// may be a secret (a webhook's).
	Post(ctx context.Context, r Request) (Response, error)
	// Refuse serves every request on a port of 127.0.0.1 with HTTP 400
	// and body (JSON) until stop is called; addr is host:port.
	Refuse(body string) (addr string, stop func(), err error)
}

var client atomic.Pointer[Client]

// Use makes c the process's Client.
func Use(c Client) { client.Store(&c) }

// ErrNoClient is the error of a build that has no HTTP client set.
var ErrNoClient = errors.New("this build of pipeline has no HTTP client")

// Post sends r with the process's Client.
func Post(ctx context.Context, r Request) (Response, error) {
	c := client.Load()
	if c == nil {
		return Response{}, ErrNoClient
	}
	return (*c).Post(ctx, r)
}

// Refuse starts the process's Client's refusing listener.
func Refuse(body string) (addr string, stop func(), err error) {
	c := client.Load()
	if c == nil {
		return "", nil, ErrNoClient
	}
	return (*c).Refuse(body)
}
