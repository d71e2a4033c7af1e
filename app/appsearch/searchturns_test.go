package appsearch_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/app/appsearch"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// A search names each transcript hit's turn and tool call, from the
// index: a tool's result in its call's turn, with the call's number and
// tool; the text after it in the next turn, with no call.
func TestSearchPlacesHitsInTurns(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := st.Create(store.Meta{ID: "20261127-120000000-abcdef", Pipeline: "p", Key: "k", Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := x.CreateTranscript("design", 1, "agent")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{
		`{"type":"system","subtype":"init","cwd":"/w"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"Look"}}}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Looking."}]}}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"wombat.go"}]}}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Done with the numbat."}]}}`,
	} {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	x.Close()
	st.Close()

	req := appsearch.SearchRequest{Pipeline: app.Pipeline{File: filepath.Join(dir, "phases.yaml")}}
	for _, c := range []struct {
		query            string
		line, turn, call int
		tool             string
	}{{"wombat", 5, 1, 1, "Bash"}, {"numbat", 6, 2, 0, ""}} {
		req.Query = c.query
		resp, err := appsearch.Search(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Hits) != 1 {
			t.Fatalf("%s: %d hits", c.query, len(resp.Hits))
		}
		if h := resp.Hits[0]; h.Line != c.line || h.Turn != c.turn || h.Call != c.call || h.Tool != c.tool {
			t.Errorf("%s: line %d, turn %d, call %d, tool %q; want %+v", c.query, h.Line, h.Turn, h.Call, h.Tool, c)
		}
	}
}
