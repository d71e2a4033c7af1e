package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// snapshotOf is the snapshot of the session in the folder session, as
// state.json holds it ({"format","seq","state"}): state.json, or when it
// has none the log's last line with a stop's state (a short session's
// stop carries its state in its log). ok is false when it has neither.
func snapshotOf(t *testing.T, session string) (content []byte, ok bool) {
	t.Helper()
	if content, err := os.ReadFile(filepath.Join(session, "state.json")); err == nil {
		return content, true
	}
	f, err := os.Open(filepath.Join(session, "events.jsonl"))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line struct {
			Seq    int64           `json:"seq"`
			Format int             `json:"format"`
			State  json.RawMessage `json:"state"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.State == nil {
			continue
		}
		content, ok = mustMarshal(json.Marshal(line)), true
	}
	return content, ok
}

func mustMarshal(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// stripStates rewrites the log of the session in the folder session
// without the states its stops carry: each line the plain event a stop
// recorded with a state.json left, as a long session's are.
func stripStates(t *testing.T, session string) {
	t.Helper()
	path := filepath.Join(session, "events.jsonl")
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, raw := range bytes.SplitAfter(content, []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var line struct {
			Seq   int64           `json:"seq"`
			Type  string          `json:"type"`
			Event json.RawMessage `json:"event"`
		}
		if err := json.Unmarshal(raw, &line); err != nil {
			t.Fatal(err)
		}
		out = append(append(out, mustMarshal(json.Marshal(line))...), '\n')
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}
