package engine

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/pipeline-dev/pipeline/internal/jsonbytes"
)

// The events every run records and the state every snapshot holds are
// written by hand rather than by encoding/json: a process's first
// encoding of a type builds its encoder by reflection, and a run of one
// short step is a process that encodes each type once (half a
// millisecond of its CPU). The output is encoding/json's, byte for byte
// (appendjson_test.go checks every field); what a run rarely holds (a
// fork's parent, a pause's values) is still given to encoding/json.

// jsonObject writes the fields of a JSON object, as encoding/json would.
type jsonObject struct {
	b      []byte
	fields int
	bad    bool // a value encoding/json refuses: it is asked, and says why
}

func (o *jsonObject) key(k string) {
	if o.fields == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.fields++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

// end closes the object; v is what it encodes, given to encoding/json
// when a value was one it refuses.
func (o *jsonObject) end(v any) ([]byte, error) {
	if o.bad {
		return json.Marshal(v)
	}
	if o.fields == 0 {
		o.b = append(o.b, '{')
	}
	return append(o.b, '}'), nil
}

func (o *jsonObject) str(k, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

func (o *jsonObject) int(k string, v int64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonObject) bool(k string, v, omitEmpty bool) {
	if omitEmpty && !v {
		return
	}
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *jsonObject) float(k string, v float64, omitEmpty bool) {
	if omitEmpty && v == 0 {
		return
	}
	o.key(k)
	o.b = o.appendFloat(o.b, v)
}

// time writes t as time.Time's MarshalJSON; omitZero is omitzero's
// IsZero (omitempty never omits a struct).
func (o *jsonObject) time(k string, t time.Time, omitZero bool) {
	if omitZero && t.IsZero() {
		return
	}
	o.key(k)
	if y := t.Year(); y < 0 || y > 9999 {
		o.bad = true
		return
	}
	o.b = append(o.b, '"')
	o.b = t.AppendFormat(o.b, time.RFC3339Nano)
	o.b = append(o.b, '"')
}

func (o *jsonObject) strings(k string, v []string, omitEmpty bool) {
	if omitEmpty && len(v) == 0 {
		return
	}
	o.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = append(o.b, '[')
	for i, s := range v {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = appendJSONString(o.b, s)
	}
	o.b = append(o.b, ']')
}

// stringMap writes a map of strings to what value writes, its keys
// sorted as encoding/json sorts them.
func stringMap[V any](o *jsonObject, k string, m map[string]V, omitEmpty bool, value func(V)) {
	if omitEmpty && len(m) == 0 {
		return
	}
	o.key(k)
	if m == nil {
		o.b = append(o.b, "null"...)
		return
	}
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	o.b = append(o.b, '{')
	for i, key := range keys {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = appendJSONString(o.b, key)
		o.b = append(o.b, ':')
		value(m[key])
	}
	o.b = append(o.b, '}')
}

// marshal writes v by encoding/json: what a run rarely holds. omit is
// the field's omitempty or omitzero, already decided.
func (o *jsonObject) marshal(k string, v any, omit bool) {
	if omit {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		o.bad = true
		return
	}
	o.key(k)
	o.b = append(o.b, raw...)
}

// appendFloat writes f as encoding/json writes a float64.
func (o *jsonObject) appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		o.bad = true
		return b
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 is written 1e-7, as JavaScript writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString writes s as encoding/json writes a string (see
// jsonbytes.AppendString).
func appendJSONString(b []byte, s string) []byte { return jsonbytes.AppendString(b, s) }

// isZero is omitzero's test of a value with no IsZero method.
func isZero(v any) bool { return reflect.ValueOf(v).IsZero() }

// nested writes an object inside o: a field's or a map's value.
func (o *jsonObject) nested(write func(*jsonObject)) {
	in := jsonObject{b: o.b}
	write(&in)
	if in.fields == 0 {
		in.b = append(in.b, '{')
	}
	o.b = append(in.b, '}')
	o.bad = o.bad || in.bad
}
