package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/pipeline-dev/pipeline/internal/jsonbytes"
)

// What every run writes of the store's own JSON (an event's line, the
// snapshot's wrapper, meta.json, the lock's holder) is written by hand
// rather than by encoding/json, as the engine's events are (see
// engine/appendjson.go): a run is a process that encodes each type once,
// and encoding/json builds each type's encoder by reflection at its first
// use. The bytes are encoding/json's (appendjson_test.go compares them);
// a value they would not be sure to match for (a string to escape, a
// fleet session's meta) is given to encoding/json.

// eventLineJSON is json.Marshal(eventLine{seq, typ, payload}), with room
// for the line's newline.
func eventLineJSON(seq int64, typ string, payload []byte) ([]byte, error) {
	b := make([]byte, 0, len(payload)+len(typ)+40)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"type":`...)
	b, plain := appendPlainString(b, typ)
	b = append(b, `,"event":`...)
	b, compact := appendRawJSON(b, payload)
	if !plain || !compact {
		return json.Marshal(eventLine{Seq: seq, Type: typ, Event: payload})
	}
	return append(b, '}'), nil
}

// snapshotJSON is json.Marshal(snapshot{Format, seq, state}).
func snapshotJSON(seq int64, state []byte) ([]byte, error) {
	b := make([]byte, 0, len(state)+40)
	b = append(b, `{"format":`...)
	b = strconv.AppendInt(b, Format, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"state":`...)
	b, compact := appendRawJSON(b, state)
	if !compact {
		return json.Marshal(snapshot{Format: Format, Seq: seq, State: state})
	}
	return append(b, '}'), nil
}

// holderJSON is json.Marshal(h).
func holderJSON(h Holder) ([]byte, error) {
	b := make([]byte, 0, 128)
	b = append(b, `{"pid":`...)
	b = strconv.AppendInt(b, int64(h.PID), 10)
	b = append(b, `,"session":`...)
	b, plain := appendPlainString(b, h.Session)
	b = append(b, `,"started":`...)
	b, timed := appendTime(b, h.Started)
	if host := h.Host; host != "" {
		b = append(b, `,"host":`...)
		var hostPlain bool
		b, hostPlain = appendPlainString(b, host)
		plain = plain && hostPlain
	}
	if h.Ended {
		b = append(b, `,"ended":true`...)
	}
	if len(h.Steps) > 0 {
		b = append(b, `,"steps":[`...)
		for i, g := range h.Steps {
			if i > 0 {
				b = append(b, ',')
			}
			var sessionPlain, bootPlain bool
			b = append(b, `{"session":`...)
			b, sessionPlain = appendPlainString(b, g.Session)
			b = append(b, `,"group":`...)
			b = strconv.AppendInt(b, int64(g.Group), 10)
			if g.Boot != "" {
				b = append(b, `,"boot":`...)
				b, bootPlain = appendPlainString(b, g.Boot)
				plain = plain && bootPlain
			}
			b = append(b, '}')
			plain = plain && sessionPlain
		}
		b = append(b, ']')
	}
	if !plain || !timed || len(h.Queued) > 0 {
		return json.Marshal(h)
	}
	return append(b, '}'), nil
}

// parseHolder is json.Unmarshal of what holderJSON writes (with the
// blanks SetHolder may leave after it); anything else (a holder with
// sessions queued or step groups, an older pipeline's, one written by
// hand) is given to encoding/json.
func parseHolder(content []byte) (Holder, error) {
	var h Holder
	content = bytes.TrimRight(content, " ")
	rest, ok := bytes.CutPrefix(content, []byte(`{"pid":`))
	var pid, session, started, host []byte
	if ok {
		pid, rest, ok = bytes.Cut(rest, []byte(`,"session":"`))
	}
	if ok {
		session, rest, ok = bytes.Cut(rest, []byte(`","started":"`))
	}
	if ok {
		started, rest, ok = bytes.Cut(rest, []byte(`"`))
	}
	if after, found := bytes.CutPrefix(rest, []byte(`,"host":"`)); ok && found {
		host, rest, ok = bytes.Cut(after, []byte(`"`))
	}
	if after, found := bytes.CutPrefix(rest, []byte(`,"ended":true`)); ok && found {
		h.Ended, rest = true, after
	}
	ok = ok && string(rest) == "}"
	n, err := strconv.Atoi(string(pid))
	ok = ok && err == nil && strconv.Itoa(n) == string(pid) && plainString(string(session)) && plainString(string(host))
	if ok {
		h.PID, h.Session, h.Host = n, string(session), string(host)
		ok = h.Started.UnmarshalText(started) == nil
	}
	if !ok {
		h = Holder{}
		err := json.Unmarshal(content, &h)
		return h, err
	}
	return h, nil
}

// metaIndentedJSON is json.MarshalIndent(meta, "", "  ").
func metaIndentedJSON(meta Meta) ([]byte, error) {
	b := make([]byte, 0, 256)
	b = append(b, "{\n  \"format\": "...)
	b = strconv.AppendInt(b, int64(meta.Format), 10)
	plain := true
	str := func(k, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		b = append(b, ",\n  \""+k+"\": "...)
		var ok bool
		b, ok = appendPlainString(b, v)
		plain = plain && ok
	}
	str("id", meta.ID, false)
	str("pipeline", meta.Pipeline, false)
	str("file", meta.File, false)
	str("spec", meta.Spec, true)
	str("key", meta.Key, false)
	b = append(b, ",\n  \"created\": "...)
	b, timed := appendTime(b, meta.Created)
	str("name", meta.Name, true)
	if !plain || !timed || meta.Fleet != nil {
		return json.MarshalIndent(meta, "", "  ")
	}
	return append(b, "\n}"...), nil
}

// appendPlainString appends s quoted, as encoding/json writes it; ok
// false when it escaped anything (what parseHolder does not read back).
func appendPlainString(b []byte, s string) ([]byte, bool) {
	n := len(b)
	b = jsonbytes.AppendString(b, s)
	return b, len(b)-n == len(s)+2
}

// plainString reports whether encoding/json writes s as it is, between
// quotes.
func plainString(s string) bool {
	_, plain := appendPlainString(make([]byte, 0, len(s)+2), s)
	return plain
}

// appendTime appends t as time.Time's MarshalJSON does; ok false for a
// time it refuses.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	text, err := t.MarshalJSON()
	return append(b, text...), err == nil
}

// appendRawJSON appends raw, a JSON value, as encoding/json writes a
// json.RawMessage: compacted, and checked. ok false when it would write
// it otherwise (empty: null; <, >, &, U+2028 and U+2029 escaped) or
// refuse it.
func appendRawJSON(b, raw []byte) ([]byte, bool) {
	if len(raw) == 0 || bytes.ContainsAny(raw, "<>&\u2028\u2029") {
		return b, false
	}
	buf := bytes.NewBuffer(b)
	if json.Compact(buf, raw) != nil {
		return b, false
	}
	return buf.Bytes(), true
}
