package telemetry

import (
	"encoding/hex"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/internal/osrand"
)

// TraceID and SpanID identify spans as W3C trace context does.
type (
	TraceID [16]byte
	SpanID  [8]byte
)

// SpanContext is a span as another span or process refers to it.
type SpanContext struct {
	Trace TraceID
	Span  SpanID
}

// Valid: neither ID is all zeros.
func (c SpanContext) Valid() bool { return c.Trace != TraceID{} && c.Span != SpanID{} }

// Traceparent is the W3C traceparent header of the span, sampled.
func (c SpanContext) Traceparent() string {
	return "00-" + hex.EncodeToString(c.Trace[:]) + "-" + hex.EncodeToString(c.Span[:]) + "-01"
}

// ParseTraceparent reads a W3C traceparent header (version 00).
func ParseTraceparent(s string) (SpanContext, bool) {
	parts := strings.Split(strings.TrimSpace(s), "-")
	var c SpanContext
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return c, false
	}
	if _, err := hex.Decode(c.Trace[:], []byte(parts[1])); err != nil {
		return c, false
	}
	if _, err := hex.Decode(c.Span[:], []byte(parts[2])); err != nil {
		return c, false
	}
	return c, c.Valid()
}

func newTraceID() TraceID {
	var id TraceID
	osrand.Read(id[:])
	return id
}

func newSpanID() SpanID {
	var id SpanID
	osrand.Read(id[:])
	return id
}

// Span kinds and status codes, as OTLP numbers them.
const (
	kindInternal = 1
	kindClient   = 3

	statusUnset = 0
	statusOK    = 1
	statusError = 2
)

// attr is one attribute: its value a string, int64, float64, bool or
// []string.
type attr struct {
	key   string
	value any
}

// event is a span event: something that happened at an instant.
type event struct {
	name  string
	at    time.Time
	attrs []attr
}

// span is a span being built, then ended and queued for export.
type span struct {
	ctx        SpanContext
	parent     SpanID
	name       string
	kind       int
	start, end time.Time
	attrs      []attr
	events     []event
	links      []SpanContext
	status     int
	statusText string
}

// set sets an attribute, replacing the one of the same key.
func (s *span) set(key string, value any) {
	for i := range s.attrs {
		if s.attrs[i].key == key {
			s.attrs[i].value = value
			return
		}
	}
	s.attrs = append(s.attrs, attr{key, value})
}

// get is an attribute's value, nil when not set.
func (s *span) get(key string) any {
	for _, a := range s.attrs {
		if a.key == key {
			return a.value
		}
	}
	return nil
}

func (s *span) addEvent(name string, at time.Time, attrs ...attr) {
	s.events = append(s.events, event{name: name, at: at, attrs: attrs})
}

// child starts a span under s.
func (s *span) child(name string, at time.Time) *span {
	return &span{ctx: SpanContext{Trace: s.ctx.Trace, Span: newSpanID()}, parent: s.ctx.Span, name: name,
		kind: kindInternal, start: at}
}
