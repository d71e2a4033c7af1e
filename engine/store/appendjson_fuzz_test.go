package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The fuzz tests below hold the store's hand-written JSON to
// encoding/json on any input: the same bytes, and an error where it
// gives one. Their seeds run with every go test; go test -fuzz
// FuzzXxx ./engine/store searches further.

var fuzzStrings = []string{"", "s1", "20261127-230501123-abcdef", "é日本", "a\"b", `a\b`, "a<b>&c", "a\u2028b", "a\x00b", "a\xffb", "\xed\xa0\x80"}

var fuzzPayloads = []string{`{}`, `{"a":[1,2,{"b":"c d"}]}`, "{\n\t\"a\": 1\r\n}", `{"a":"<b>"}`, `{"a":"\u003c"}`, "{\"a\":\"\u2028\"}",
	`null`, `"x"`, `1.5e3`, ``, `{`, `[1,]`, `{"a":"b"} x`, "{\"a\":\"\xff\"}", " 1 ", "\"\xed\xa0\x80\"", `-0`, `01`}

func FuzzEventLineJSON(f *testing.F) {
	for i, s := range fuzzStrings {
		for _, p := range fuzzPayloads {
			f.Add(int64(i), s, []byte(p))
		}
	}
	f.Fuzz(func(t *testing.T, seq int64, typ string, payload []byte) {
		want, wantErr := json.Marshal(eventLine{Seq: seq, Type: typ, Event: payload})
		got, err := eventLineJSON(seq, typ, payload)
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("event line %d %q %q: %s, %v; encoding/json: %s, %v", seq, typ, payload, got, err, want, wantErr)
		}
		want, wantErr = json.Marshal(snapshot{Format: Format, Seq: seq, State: payload})
		got, err = snapshotJSON(seq, payload)
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("snapshot %d %q: %s, %v; encoding/json: %s, %v", seq, payload, got, err, want, wantErr)
		}
	})
}

// fuzzTime is a time from fuzzed parts: any instant, in UTC, the local
// zone or a fixed one (an offset of any seconds, which RFC 3339 cannot
// write whole).
func fuzzTime(sec int64, nsec int64, zone int32) time.Time {
	at := time.Unix(sec, nsec)
	switch zone {
	case 0:
		return at.UTC()
	case 1:
		return at
	}
	return at.In(time.FixedZone("z", int(zone)))
}

func FuzzHolderAndMetaJSON(f *testing.F) {
	for i, s := range fuzzStrings {
		f.Add(i*1000-1, s, "vm", true, int64(1_800_000_000), int64(123456789), int32(i*1800), "phases.yaml")
		f.Add(0, "s", s, false, int64(-62135596801), int64(0), int32(1), s)
		f.Add(1<<40, s, "", false, int64(253402300800), int64(999999999), int32(30), "")
	}
	f.Fuzz(func(t *testing.T, pid int, session, host string, ended bool, sec, nsec int64, zone int32, name string) {
		at := fuzzTime(sec, nsec, zone)
		h := Holder{PID: pid, Session: session, Started: at, Host: host, Ended: ended}
		want, wantErr := json.Marshal(h)
		got, err := holderJSON(h)
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("holder %+v: %s, %v; encoding/json: %s, %v", h, got, err, want, wantErr)
		}
		m := Meta{Format: Format, ID: session, Pipeline: host, File: name, Spec: name, Key: host, Created: at, Name: session}
		want, wantErr = json.MarshalIndent(m, "", "  ")
		got, err = metaIndentedJSON(m)
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("meta %+v:\n%s, %v; encoding/json:\n%s, %v", m, got, err, want, wantErr)
		}
	})
}

func FuzzParseHolder(f *testing.F) {
	when := time.Date(2026, 11, 27, 23, 5, 1, 123456789, time.UTC)
	for _, h := range []Holder{{PID: 4242, Session: "20261127-230501123-abcdef", Started: when, Host: "vm"}, {PID: -1, Started: when, Ended: true},
		{PID: 3, Session: "s", Started: when, Queued: []string{"a"}, Host: "h"}} {
		content, err := holderJSON(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(content)
	}
	for _, s := range []string{``, `{}`, `{"pid":012,"session":"s","started":"2026-11-27T23:05:01Z"}`, `{"pid":-0,"session":"s","started":"2026-11-27T23:05:01Z"}`,
		`{"pid":12,"session":"s\u0041","started":"2026-11-27T23:05:01Z"}`, `{"pid":12,"session":"s","started":"2026-11-27T23:05:01+01:00","host":"","ended":true}`,
		"{\"pid\":12,\"session\":\"\xff\",\"started\":\"2026-11-27T23:05:01Z\"}", `{"pid":99999999999999999999,"session":"s","started":"2026-11-27T23:05:01Z"}`,
		`{"pid":12,"session":"s","started":"2026-11-27T23:05:01Z"} `, `{"pid":12,"session":"s","started":"2026-11-27T24:05:01Z"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		var want Holder
		wantErr := json.Unmarshal(content, &want)
		got, err := parseHolder(content)
		if !reflect.DeepEqual(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("%q: %+v, %v; encoding/json: %+v, %v", content, got, err, want, wantErr)
		}
	})
}
