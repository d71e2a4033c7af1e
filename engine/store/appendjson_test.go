package store

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The store's JSON written by hand is encoding/json's, byte for byte,
// for values it writes itself and for those it gives to encoding/json
// (strings to escape, payloads to compact or refuse, times out of
// range), and the errors are encoding/json's.
func TestStoreJSONIsEncodingJSON(t *testing.T) {
	when := time.Date(2026, 11, 27, 23, 5, 1, 123456789, time.FixedZone("x", 3600))
	strs := []string{"", "s1", "20261127-230501123-abcdef", "é日本", "a\"b", `a\b`, "a<b>&c", "a\u2028b", "a\u2029", "a\x00b", "\x1f", "a\xffb", "tab\there", "ok space"}
	payloads := []string{`{}`, `{"At":"2026-11-27T23:05:01Z","Plan":"abc"}`, `{ "a" : [1, 2, {"b" : "c d"}] }`, "{\n\t\"a\": 1\r\n}",
		`{"a":"<b>"}`, `{"a":"\u003c"}`, "{\"a\":\"\u2028\"}", `null`, `"x"`, `1.5e3`, ``, `{`, `{"a":}`, `[1,]`, `{"a":"b"} x`, "{\"a\":\"\xff\"}"}
	for i, typ := range append([]string{"Started", "StepFinished"}, strs...) {
		for _, p := range payloads {
			want, wantErr := json.Marshal(eventLine{Seq: int64(i), Type: typ, Event: json.RawMessage(p)})
			got, err := eventLineJSON(int64(i), typ, []byte(p))
			if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
				t.Errorf("event line %q %q: %s, %v; encoding/json: %s, %v", typ, p, got, err, want, wantErr)
			}
		}
	}
	for _, p := range payloads {
		want, wantErr := json.Marshal(snapshot{Format: Format, Seq: 7, State: json.RawMessage(p)})
		got, err := snapshotJSON(7, []byte(p))
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("snapshot %q: %s, %v; encoding/json: %s, %v", p, got, err, want, wantErr)
		}
	}
	times := []time.Time{when, {}, time.Now(), when.UTC(), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("odd", 30))}
	var holders []Holder
	for _, s := range strs {
		for _, at := range times {
			holders = append(holders, Holder{PID: 4242, Session: s, Started: at}, Holder{PID: -1, Session: "s", Started: at, Host: s, Ended: true},
				Holder{Session: s, Started: at, Host: "vm", Queued: []string{s}}, Holder{PID: 1, Session: "x", Started: at, Ended: true},
				Holder{PID: 5, Session: s, Started: at, Host: "vm", Steps: []StepGroup{{Session: s, Group: 77, Boot: s}, {Session: "x", Group: -1}}})
		}
	}
	for _, h := range holders {
		want, wantErr := json.Marshal(h)
		got, err := holderJSON(h)
		if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("holder %+v: %s, %v; encoding/json: %s, %v", h, got, err, want, wantErr)
		}
	}
	for _, s := range strs {
		for _, at := range times {
			for _, m := range []Meta{
				{Format: Format, ID: s, Pipeline: s, File: "phases.yaml", Spec: s, Key: "k1", Created: at, Name: s},
				{Format: 1, ID: "id", File: s, Key: s, Created: at},
				{Format: Format, ID: "id", Pipeline: "p", File: "f", Key: "k", Created: at, Fleet: &Fleet{Address: s, Namespace: "n", TaskQueue: "q"}},
			} {
				want, wantErr := json.MarshalIndent(m, "", "  ")
				got, err := metaIndentedJSON(m)
				if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
					t.Errorf("meta %+v:\n%s, %v; encoding/json:\n%s, %v", m, got, err, want, wantErr)
				}
			}
		}
	}
}

// parseHolder reads what json.Unmarshal reads: the holders pipeline
// writes, an older pipeline's, and files written otherwise.
func TestParseHolderIsEncodingJSON(t *testing.T) {
	when := time.Date(2026, 11, 27, 23, 5, 1, 123456789, time.UTC)
	var files []string
	for _, h := range []Holder{{PID: 4242, Session: "20261127-230501123-abcdef", Started: when, Host: "vm"},
		{PID: 1, Started: when}, {PID: 7, Session: "s", Started: when, Host: "vm", Ended: true}, {PID: 7, Session: "s", Started: when, Ended: true},
		{PID: 3, Session: "s", Started: when, Queued: []string{"a", "b"}, Host: "h"}, {PID: 3, Session: "a\"b", Started: when, Host: "é"},
		{PID: 5, Session: "s", Started: when, Host: "vm", Steps: []StepGroup{{Session: "s", Group: 77, Boot: "b"}}}} {
		content, err := holderJSON(h)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, string(content))
	}
	files = append(files, ``, `{}`, `{"pid":12}`, `{"pid":12,"session":"s","started":"2026-11-27T23:05:01Z"}`,
		`{"pid": 12, "session": "s", "started": "2026-11-27T23:05:01Z"}`, `{"pid":012,"session":"s","started":"2026-11-27T23:05:01Z"}`,
		`{"pid":+12,"session":"s","started":"2026-11-27T23:05:01Z"}`, `{"pid":12,"session":"s","started":"not a time"}`,
		`{"pid":12,"session":"s\u0041","started":"2026-11-27T23:05:01Z"}`, `{"pid":12,"session":"s","started":"2026-11-27T23:05:01Z","ended":false}`,
		`{"pid":12,"session":"s","started":"2026-11-27T23:05:01Z","host":"h","ended":true,"x":1}`, `{"pid":12,"session":"s","started":"2026-11-27T23:05:01Z"}}`,
		`{"pid":12,"session":"s","started":"2026-11-27T23:05:01Z","host":"h"`, `{"PID":12,"Session":"s","started":"2026-11-27T23:05:01+01:00"}`,
		`{"pid":12,"session":"s","started":"2026-11-27T23:05:01Z"}   `, `   `, `{"pid":12,"session":"s","started":"2026-11-27T23:05:01Z"} x`)
	for _, f := range files {
		var want Holder
		wantErr := json.Unmarshal([]byte(f), &want)
		got, err := parseHolder([]byte(f))
		if !reflect.DeepEqual(got, want) || (err == nil) != (wantErr == nil) {
			t.Errorf("%s: %+v, %v; encoding/json: %+v, %v", f, got, err, want, wantErr)
		}
	}
}
