package telemetry

import (
	"slices"
	"strings"
	"time"
)

// Metric names. Counters of what happened, histograms of how long.
const (
	MetricSteps         = "pipeline.steps"
	MetricTokens        = "pipeline.tokens"
	MetricCost          = "pipeline.cost"
	MetricRetries       = "pipeline.retries"
	MetricPauses        = "pipeline.pauses"
	MetricStepDuration  = "pipeline.step.duration"
	MetricPhaseDuration = "pipeline.phase.duration"
)

// durationBounds are the histograms' bucket bounds, in seconds: from a
// shell step's second to an agent's hour.
var durationBounds = []float64{0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// meters holds this process's metrics: cumulative since it started.
type meters struct {
	start time.Time
	sums  map[string]map[string]*sumPoint
	hists map[string]map[string]*histPoint
}

func newMeters(start time.Time) *meters {
	return &meters{start: start, sums: map[string]map[string]*sumPoint{}, hists: map[string]map[string]*histPoint{}}
}

// seriesKey names a series by its attributes.
func seriesKey(attrs []attr) string {
	var b strings.Builder
	for _, a := range attrs {
		b.WriteString(a.key)
		b.WriteByte('=')
		if s, ok := a.value.(string); ok {
			b.WriteString(s)
		}
		b.WriteByte(0)
	}
	return b.String()
}

func (m *meters) add(name string, v float64, isInt bool, attrs ...attr) {
	if v == 0 && name != MetricSteps {
		return
	}
	series := m.sums[name]
	if series == nil {
		series = map[string]*sumPoint{}
		m.sums[name] = series
	}
	k := seriesKey(attrs)
	p := series[k]
	if p == nil {
		p = &sumPoint{attrs: attrs, isInt: isInt}
		series[k] = p
	}
	p.value += v
}

func (m *meters) record(name string, v float64, attrs ...attr) {
	series := m.hists[name]
	if series == nil {
		series = map[string]*histPoint{}
		m.hists[name] = series
	}
	k := seriesKey(attrs)
	p := series[k]
	if p == nil {
		p = &histPoint{attrs: attrs, min: v, max: v, buckets: make([]uint64, len(durationBounds)+1)}
		series[k] = p
	}
	p.count++
	p.sum += v
	p.min, p.max = min(p.min, v), max(p.max, v)
	i, _ := slices.BinarySearch(durationBounds, v)
	p.buckets[i]++
}

// describe is a metric's description and unit.
func describe(name string) (description, unit string) {
	switch name {
	case MetricSteps:
		return "steps run, by phase, agent and outcome", "{step}"
	case MetricTokens:
		return "tokens of steps, by phase, model and type (input or output)", "{token}"
	case MetricCost:
		return "cost of steps as the agents reported it", "USD"
	case MetricRetries:
		return "retries scheduled by the retry policy", "{retry}"
	case MetricPauses:
		return "sessions paused, by reason", "{pause}"
	case MetricStepDuration:
		return "how long steps ran", "s"
	case MetricPhaseDuration:
		return "how long phases ran, across their attempts, when they ended", "s"
	}
	return "", ""
}

// snapshot is every metric as it stands, in a stable order.
func (m *meters) snapshot() []metric {
	var out []metric
	for _, name := range slices.Sorted(mapKeysOf(m.sums)) {
		mt := metric{name: name}
		mt.description, mt.unit = describe(name)
		for _, k := range slices.Sorted(mapKeysOf(m.sums[name])) {
			mt.sums = append(mt.sums, *m.sums[name][k])
		}
		out = append(out, mt)
	}
	for _, name := range slices.Sorted(mapKeysOf(m.hists)) {
		mt := metric{name: name, histogram: true, bounds: durationBounds}
		mt.description, mt.unit = describe(name)
		for _, k := range slices.Sorted(mapKeysOf(m.hists[name])) {
			p := *m.hists[name][k]
			p.buckets = slices.Clone(p.buckets)
			mt.hists = append(mt.hists, p)
		}
		out = append(out, mt)
	}
	return out
}

func mapKeysOf[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
