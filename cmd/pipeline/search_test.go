package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/filetree"
)

// searchReportJSON is what the tests read of search -o json.
type searchReportJSON struct {
	Query string `json:"query"`
	Hits  []struct {
		Session string   `json:"session"`
		Phase   string   `json:"phase"`
		Attempt int      `json:"attempt"`
		Step    string   `json:"step"`
		Kind    string   `json:"kind"`
		Section string   `json:"section"`
		File    string   `json:"file"`
		Line    int      `json:"line"`
		Snippet string   `json:"snippet"`
		Marks   [][2]int `json:"marks"`
		Marked  string   `json:"marked"`
		Score   float64  `json:"score"`
	} `json:"hits"`
	Indexed struct {
		Sessions int   `json:"sessions"`
		Files    int   `json:"files"`
		Chunks   int   `json:"chunks"`
		Bytes    int64 `json:"bytes"`
		Removed  int   `json:"removed_sessions"`
	} `json:"indexed"`
}

func searchJSONOf(t *testing.T, dir string, args ...string) searchReportJSON {
	t.Helper()
	r := pipeline(t, dir, append([]string{"search", "-o", "json"}, args...)...)
	var out searchReportJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("search %v: exit %d, %v: %s %s", args, r.code, err, r.stdout, r.stderr)
	}
	// As grep: 0 with a hit, 1 without.
	want := 0
	if len(out.Hits) == 0 {
		want = exitFailed
	}
	if r.code != want {
		t.Fatalf("search %v: exit %d, want %d: %s %s", args, r.code, want, r.stdout, r.stderr)
	}
	return out
}

// pipeline search over sessions made by pipeline run with a command
// agent that writes stream-json: hits with their session, phase,
// attempt, step and line; the filters; -o json; the usage errors; the
// store's other commands unaffected by the index.
func TestSearchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	// The agent: a JSON line with the prompt, a JSON line of text, a
	// plain line, and a last line (the phase's summary).
	// (The prompt's first line: the rest is the markers' hint.)
	write(t, dir, "agent.sh", `printf '{"type":"system","subtype":"init","prompt":"%s"}\n' "$(printf '%s\n' "$1" | head -n 1)"
printf '{"type":"assistant","message":{"content":[{"type":"text","text":"the %s capacitor needs 1.21 gigawatts"}]}}\n' "$WORD"
echo "plain line about $WORD and bananas"
echo "done"
`)
	pipelineYAML := func(word string) string {
		return `version: 1
agent:
  kind: command
  command: [sh, ./agent.sh, "{prompt}"]
  env: {WORD: ` + word + `}
phases:
  - name: design
    prompt: Design the widget.
  - name: build
    prompt: Build the widget.
`
	}
	write(t, dir, "phases.yaml", pipelineYAML("flux"))
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	first := status(t, dir).ID
	// The first session is ten days old.
	old := time.Now().Add(-10 * 24 * time.Hour)
	filepath.WalkDir(filepath.Join(dir, ".pipeline", "sessions", first, "transcripts"), func(path string, _ os.DirEntry, _ error) error {
		return os.Chtimes(path, old, old)
	})
	write(t, dir, "phases.yaml", pipelineYAML("warp"))
	if r := pipeline(t, dir, "run", "--new"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	second := status(t, dir).ID
	if first == second {
		t.Fatal("one session")
	}

	storeFiles := func() map[string]string {
		root := filepath.Join(dir, ".pipeline")
		tree := filetree.Of(t, root)
		// The store's folder itself gets the search folder.
		maps.DeleteFunc(tree, func(path, _ string) bool {
			return path == root || path == filepath.Join(root, "search") || strings.HasPrefix(path, filepath.Join(root, "search")+"/")
		})
		return tree
	}
	before := storeFiles()

	// Text: a heading per hit and the snippet, the match between « and »
	// (not a terminal).
	r := pipeline(t, dir, "search", "capacitor", "--phase", "design")
	if r.code != 0 {
		t.Fatalf("search: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{
		first + "  design · attempt 1 · agent · transcript line 2 · turn 1\n    the flux «capacitor» needs 1.21 gigawatts\n",
		second + "  design · attempt 1 · agent · transcript line 2 · turn 1\n    the warp «capacitor» needs 1.21 gigawatts\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("search output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Count(r.stdout, "\n") != 4 {
		t.Errorf("two hits of two lines each expected:\n%s", r.stdout)
	}
	if after := storeFiles(); !maps.Equal(before, after) {
		t.Errorf("search changed the store outside search/:\nbefore %v\nafter  %v", before, after)
	}

	// JSON; the second search indexes nothing new.
	out := searchJSONOf(t, dir, "bananas")
	if out.Indexed.Bytes != 0 || out.Indexed.Sessions != 2 {
		t.Errorf("second search indexed %+v", out.Indexed)
	}
	if len(out.Hits) != 4 {
		t.Fatalf("bananas: %d hits: %+v", len(out.Hits), out.Hits)
	}
	h := out.Hits[0]
	if h.Kind != "transcript" || h.Line != 3 || h.Attempt != 1 || h.Step != "agent" || h.File != "transcripts/"+h.Phase+"/1-agent.log" ||
		h.Snippet[h.Marks[0][0]:h.Marks[0][1]] != "bananas" || !strings.Contains(h.Marked, "«bananas»") || h.Score <= 0 {
		t.Errorf("hit %+v", h)
	}
	// The prompt's words: in the prompt file (line 1), not in the
	// transcript's system/init line, which is the CLI's set-up, not what
	// was said.
	out = searchJSONOf(t, dir, "widget", "--session", second[:len(second)-2], "--phase", "build")
	kinds := map[string]int{}
	for _, h := range out.Hits {
		if h.Session != second || h.Phase != "build" {
			t.Errorf("filtered hit %+v", h)
		}
		kinds[h.Kind] = h.Line
	}
	if kinds["prompt"] != 1 || len(kinds) != 1 {
		t.Errorf("widget in build of %s: %+v", second, out.Hits)
	}
	// --since: the first session's transcripts are ten days old.
	for since, want := range map[string]int{"3d": 1, "2h": 1, old.Add(-24 * time.Hour).Format("2006-01-02"): 2, "2099-01-01": 0} {
		out := searchJSONOf(t, dir, "gigawatts", "--phase", "design", "--since", since)
		if len(out.Hits) != want {
			t.Errorf("--since %s: %d hits, want %d: %+v", since, len(out.Hits), want, out.Hits)
		}
		if want == 1 && out.Hits[0].Session != second {
			t.Errorf("--since %s: %+v", since, out.Hits)
		}
	}
	// A phrase, in the words of the shell.
	if out := searchJSONOf(t, dir, `"warp capacitor"`); len(out.Hits) != 2 {
		t.Errorf("phrase: %+v", out.Hits)
	}
	if out := searchJSONOf(t, dir, `"capacitor warp"`); len(out.Hits) != 0 {
		t.Errorf("phrase in the other order: %+v", out.Hits)
	}
	if r := pipeline(t, dir, "search", "nothingmatchesthis"); r.code != exitFailed || r.stdout != "no hits for nothingmatchesthis\n" {
		t.Errorf("no hits: exit %d, %q", r.code, r.stdout)
	}

	// Usage errors: exit 2, as JSON under -o json.
	for _, args := range [][]string{{"search"}, {"search", "!!!"}, {"search", `"" *`}, {"search", "x", "--limit", "0"},
		{"search", "x", "--bogus"}, {"search", "x", "--since", "yesterday"}, {"search", "x", "--session", "nosuch"},
		{"search", "x", "-o", "yaml"}} {
		r := pipeline(t, dir, args...)
		if r.code != exitUsage || r.stderr == "" {
			t.Errorf("%v: exit %d, %q", args, r.code, r.stderr)
		}
		r = pipeline(t, dir, append(args, "-o", "json")...)
		var e struct {
			Error string `json:"error"`
			Code  int    `json:"code"`
		}
		if args[len(args)-1] != "yaml" && (json.Unmarshal([]byte(r.stdout), &e) != nil || e.Code != exitUsage || e.Error == "") {
			t.Errorf("%v -o json: %q", args, r.stdout)
		}
	}
	if r := pipeline(t, t.TempDir(), "search", "x"); r.code != exitUsage || !strings.Contains(r.stderr, "no sessions") {
		t.Errorf("no store: exit %d, %s", r.code, r.stderr)
	}

	// The rest of the store's commands see no search index: the listing,
	// export (the archive holds the session's files alone), clean.
	var list []map[string]any
	if r := pipeline(t, dir, "sessions", "-o", "json"); json.Unmarshal([]byte(r.stdout), &list) != nil || len(list) != 2 {
		t.Errorf("sessions: %s %s", r.stdout, r.stderr)
	}
	if r := pipeline(t, filepath.Dir(dir), "sessions", "--all", "-o", "json"); r.code != 0 {
		t.Errorf("sessions --all: exit %d, %s", r.code, r.stderr)
	}
	archive := filepath.Join(t.TempDir(), "s.tar.gz")
	if r := pipeline(t, dir, "export", first, "-o", archive); r.code != 0 {
		t.Fatalf("export: exit %d, %s", r.code, r.stderr)
	}
	for _, name := range archiveNames(t, archive) {
		if strings.Contains(name, "search") || strings.Contains(name, "index.db") {
			t.Errorf("the archive holds %s", name)
		}
	}
	// clean goes by the sessions (none old enough here) and leaves the
	// index to the next search, which follows the sessions.
	if r := pipeline(t, dir, "clean", "--older-than", "1h"); r.code != 0 {
		t.Errorf("clean: exit %d, %s", r.code, r.stderr)
	}
	if out := searchJSONOf(t, dir, "capacitor"); out.Indexed.Removed != 0 || len(out.Hits) != 4 {
		t.Errorf("after clean: %+v", out)
	}
}

// archiveNames lists the entries of a gzip'd tar.
func archiveNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		hdr, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, hdr.Name)
	}
	if len(names) == 0 {
		t.Fatalf("no entries in the archive %s", path)
	}
	return names
}
