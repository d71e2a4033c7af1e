package telemetry

import (
	"encoding/binary"
	"math"
	"slices"
	"time"
)

// The OTLP messages (opentelemetry-proto's trace/v1, metrics/v1, common/v1
// and resource/v1), written with protobuf's wire format by hand: the
// fields below are theirs, numbered as there. The tests read the bytes
// back with the generated Go types of opentelemetry-proto.

// pb is a protobuf message being written.
type pb struct{ b []byte }

const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func (m *pb) tag(field, wire int) { m.b = binary.AppendUvarint(m.b, uint64(field)<<3|uint64(wire)) }

func (m *pb) varint(field int, v uint64) {
	if v == 0 {
		return
	}
	m.tag(field, wireVarint)
	m.b = binary.AppendUvarint(m.b, v)
}

func (m *pb) fixed64(field int, v uint64) {
	m.tag(field, wireFixed64)
	m.b = binary.LittleEndian.AppendUint64(m.b, v)
}

func (m *pb) fixed32(field int, v uint32) {
	m.tag(field, wireFixed32)
	m.b = binary.LittleEndian.AppendUint32(m.b, v)
}

func (m *pb) double(field int, v float64) { m.fixed64(field, math.Float64bits(v)) }

func (m *pb) bytes(field int, v []byte) {
	m.tag(field, wireBytes)
	m.b = binary.AppendUvarint(m.b, uint64(len(v)))
	m.b = append(m.b, v...)
}

func (m *pb) str(field int, v string) {
	if v == "" {
		return
	}
	m.bytes(field, []byte(v))
}

// msg writes a nested message that fill writes.
func (m *pb) msg(field int, fill func(*pb)) {
	var inner pb
	fill(&inner)
	m.bytes(field, inner.b)
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

// keyValue writes a common.v1.KeyValue.
func keyValue(m *pb, field int, a attr) {
	m.msg(field, func(kv *pb) {
		kv.str(1, a.key)
		kv.msg(2, func(v *pb) { anyValue(v, a.value) })
	})
}

// anyValue writes the fields of a common.v1.AnyValue.
func anyValue(v *pb, value any) {
	switch x := value.(type) {
	case string:
		v.bytes(1, []byte(x))
	case bool:
		v.tag(2, wireVarint)
		v.b = binary.AppendUvarint(v.b, map[bool]uint64{false: 0, true: 1}[x])
	case int:
		v.tag(3, wireVarint)
		v.b = binary.AppendUvarint(v.b, uint64(int64(x)))
	case int64:
		v.tag(3, wireVarint)
		v.b = binary.AppendUvarint(v.b, uint64(x))
	case float64:
		v.double(4, x)
	case []string:
		v.msg(5, func(arr *pb) {
			for _, s := range x {
				arr.msg(1, func(e *pb) { e.bytes(1, []byte(s)) })
			}
		})
	}
}

func attributes(m *pb, field int, attrs []attr) {
	for _, a := range attrs {
		keyValue(m, field, a)
	}
}

// resourceAttrs is the resource as attributes, in a stable order.
func resourceAttrs(resource map[string]string) []attr {
	var out []attr
	for _, k := range slices.Sorted(mapKeysOf(resource)) {
		out = append(out, attr{k, resource[k]})
	}
	return out
}

// scope is the instrumentation scope of everything exported here.
func scope(m *pb, field int, version string) {
	m.msg(field, func(s *pb) {
		s.str(1, ScopeName)
		s.str(2, version)
	})
}

// ScopeName names this instrumentation.
const ScopeName = "github.com/pipeline-dev/pipeline/telemetry"

// encodeTraces is a collector.trace.v1.ExportTraceServiceRequest of spans.
func encodeTraces(resource map[string]string, version string, spans []*span) []byte {
	var req pb
	req.msg(1, func(rs *pb) { // ResourceSpans
		rs.msg(1, func(r *pb) { attributes(r, 1, resourceAttrs(resource)) })
		rs.msg(2, func(ss *pb) { // ScopeSpans
			scope(ss, 1, version)
			for _, s := range spans {
				ss.msg(2, func(m *pb) { encodeSpan(m, s) })
			}
		})
	})
	return req.b
}

// encodeSpan writes the fields of a trace.v1.Span.
func encodeSpan(m *pb, s *span) {
	m.bytes(1, s.ctx.Trace[:])
	m.bytes(2, s.ctx.Span[:])
	if s.parent != (SpanID{}) {
		m.bytes(4, s.parent[:])
	}
	m.str(5, s.name)
	m.varint(6, uint64(s.kind))
	m.fixed64(7, unixNano(s.start))
	m.fixed64(8, unixNano(s.end))
	attributes(m, 9, s.attrs)
	for _, e := range s.events {
		m.msg(11, func(em *pb) {
			em.fixed64(1, unixNano(e.at))
			em.str(2, e.name)
			attributes(em, 3, e.attrs)
		})
	}
	for _, l := range s.links {
		m.msg(13, func(lm *pb) {
			lm.bytes(1, l.Trace[:])
			lm.bytes(2, l.Span[:])
			attributes(lm, 4, []attr{{"pipeline.link", "session's first run"}})
			lm.fixed32(6, 1) // sampled
		})
	}
	if s.status != statusUnset {
		m.msg(15, func(st *pb) {
			st.str(2, s.statusText)
			st.varint(3, uint64(s.status))
		})
	}
	m.fixed32(16, 1) // flags: sampled
}

// Metric data, as encodeMetrics writes it.
type (
	// sumPoint is one series of a monotonic sum.
	sumPoint struct {
		attrs []attr
		value float64
		isInt bool
	}
	// histPoint is one series of a histogram with explicit bounds.
	histPoint struct {
		attrs    []attr
		count    uint64
		sum      float64
		min, max float64
		buckets  []uint64
	}
	metric struct {
		name, description, unit string
		sums                    []sumPoint
		hists                   []histPoint
		bounds                  []float64
		histogram               bool
	}
)

// temporalityCumulative: each export carries the totals since the
// process started.
const temporalityCumulative = 2

// encodeMetrics is a collector.metrics.v1.ExportMetricsServiceRequest.
func encodeMetrics(resource map[string]string, version string, start, now time.Time, metrics []metric) []byte {
	var req pb
	req.msg(1, func(rm *pb) { // ResourceMetrics
		rm.msg(1, func(r *pb) { attributes(r, 1, resourceAttrs(resource)) })
		rm.msg(2, func(sm *pb) { // ScopeMetrics
			scope(sm, 1, version)
			for _, mt := range metrics {
				sm.msg(2, func(m *pb) { encodeMetric(m, mt, start, now) })
			}
		})
	})
	return req.b
}

func encodeMetric(m *pb, mt metric, start, now time.Time) {
	m.str(1, mt.name)
	m.str(2, mt.description)
	m.str(3, mt.unit)
	if mt.histogram {
		m.msg(9, func(h *pb) {
			for _, p := range mt.hists {
				h.msg(1, func(dp *pb) {
					attributes(dp, 9, p.attrs)
					dp.fixed64(2, unixNano(start))
					dp.fixed64(3, unixNano(now))
					dp.fixed64(4, p.count)
					dp.double(5, p.sum)
					dp.msg(6, func(packed *pb) {
						for _, c := range p.buckets {
							packed.b = binary.LittleEndian.AppendUint64(packed.b, c)
						}
					})
					dp.msg(7, func(packed *pb) {
						for _, b := range mt.bounds {
							packed.b = binary.LittleEndian.AppendUint64(packed.b, math.Float64bits(b))
						}
					})
					dp.double(11, p.min)
					dp.double(12, p.max)
				})
			}
			h.varint(2, temporalityCumulative)
		})
		return
	}
	m.msg(7, func(sum *pb) {
		for _, p := range mt.sums {
			sum.msg(1, func(dp *pb) {
				attributes(dp, 7, p.attrs)
				dp.fixed64(2, unixNano(start))
				dp.fixed64(3, unixNano(now))
				if p.isInt {
					dp.fixed64(6, uint64(int64(p.value)))
				} else {
					dp.double(4, p.value)
				}
			})
		}
		sum.varint(2, temporalityCumulative)
		sum.varint(3, 1) // monotonic
	})
}
