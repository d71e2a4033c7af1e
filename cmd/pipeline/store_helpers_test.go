package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// storeReadable checks that every file the store keeps parses: meta.json
// and state.json as JSON, each line of each events.jsonl as JSON, each
// line of index.tsv as its 12 fields (11 for a removed session's last
// line); none ends in part of a line.
func storeReadable(t *testing.T, root string) {
	t.Helper()
	sessions, _ := filepath.Glob(filepath.Join(root, "sessions", "*"))
	for _, s := range sessions {
		readable(t, s)
	}
	index, err := os.ReadFile(filepath.Join(root, "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(index) > 0 && index[len(index)-1] != '\n' {
		t.Errorf("index.tsv ends in part of a line: %q", index[max(0, len(index)-60):])
	}
	for n, line := range strings.Split(strings.TrimSuffix(string(index), "\n"), "\n") {
		if len(index) == 0 {
			break // an index compacted with no session left: no line at all
		}
		if tabs := strings.Count(line, "\t"); tabs != 11 && !(tabs == 10 && strings.Split(line, "\t")[2] == "removed") {
			t.Errorf("index.tsv line %d is not readable: %q", n+1, line)
		}
	}
}

// eventsOf is a session's event log.
func eventsOf(t *testing.T, root, id string) []byte {
	t.Helper()
	content, err := os.ReadFile(filepath.Join(root, "sessions", id, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return content
}

// indexMatchesFolders checks the index against the session folders: each
// folder is listed once, with the status its snapshot says (running,
// with none yet), and nothing is listed that has no folder.
func indexMatchesFolders(t *testing.T, dir, state string) {
	t.Helper()
	r := pipeline(t, dir, "sessions", "-o", "json", "--state-dir", state)
	var listed []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Reason string `json:"pause_reason"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil {
		t.Fatalf("sessions: exit %d, %v: %s", r.code, err, r.stderr)
	}
	// The index itself, not sessions' view of it (which shows a session
	// whose runner is gone as paused).
	index := map[string]string{}
	content, _ := os.ReadFile(filepath.Join(state, "index.tsv"))
	for _, line := range strings.Split(strings.TrimSuffix(string(content), "\n"), "\n") {
		if fields := strings.Split(line, "\t"); len(fields) >= 11 {
			index[fields[0]] = fields[2]
		}
	}
	seen := map[string]int{}
	for _, s := range listed {
		seen[s.ID]++
		if _, err := os.Stat(filepath.Join(state, "sessions", s.ID)); err != nil {
			t.Errorf("%s is listed (%s) and has no folder", s.ID, s.Status)
		}
	}
	folders, _ := filepath.Glob(filepath.Join(state, "sessions", "*"))
	for _, f := range folders {
		id := filepath.Base(f)
		if strings.HasPrefix(id, ".") {
			t.Errorf("a folder left half made or half removed: %s", id)
			continue
		}
		want := "running"
		if content, ok := snapshotOf(t, f); ok {
			var snap struct {
				State struct {
					Status string `json:"status"`
				} `json:"state"`
			}
			if err := json.Unmarshal(content, &snap); err != nil {
				t.Errorf("%s's snapshot: %v", id, err)
			}
			want = snap.State.Status
		}
		if seen[id] != 1 {
			t.Errorf("%s (%s) is listed %d times", id, want, seen[id])
		}
		if index[id] != want {
			t.Errorf("%s is listed %q, its snapshot says %q", id, index[id], want)
		}
	}
}
