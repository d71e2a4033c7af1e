package appsearch

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// A hit is placed in its turn and call; a hit past the bytes a search may
// read keeps none, and the bytes read are what was read.
func TestPlaceInFileWithinItsBudget(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := "20261127-120000000-abcdef"
	x, err := st.Create(store.Meta{ID: id, Pipeline: "p", Key: "k", Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := x.CreateTranscript("design", 1, "agent")
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"type":"system","subtype":"init","cwd":"/w"}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"Look"}}}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Looking."}]}}`,
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a.go"}]}}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"Done."}]}}`,
	}
	size := 0
	for _, l := range lines {
		f.WriteString(l + "\n")
		size += len(l) + 1
	}
	f.Close()
	x.Close()
	rel := "transcripts/design/1-agent.log"
	hit := func(line int) *Hit {
		return &Hit{Hit: search.Hit{Session: id, File: rel, Line: line, Kind: search.KindTranscript}}
	}

	result, text := hit(5), hit(6)
	if read := placeInFile(st, id, rel, []*Hit{result, text}, 1<<20); read != int64(size) {
		t.Errorf("read %d bytes, want the file's %d", read, size)
	}
	if result.Turn != 1 || result.Call != 1 || result.Tool != "Bash" || text.Turn != 2 || text.Call != 0 {
		t.Errorf("placed: result %+v, text %+v; want the result in turn 1, call 1 (Bash), the text in turn 2", result, text)
	}

	early, late := hit(4), hit(6)
	budget := int64(len(lines[0]) + len(lines[1]) + len(lines[2]) + len(lines[3]) + 4)
	if read := placeInFile(st, id, rel, []*Hit{early, late}, budget); read != budget {
		t.Errorf("read %d bytes with a budget of %d", read, budget)
	}
	if early.Call != 1 || late.Turn != 0 {
		t.Errorf("within the budget %+v, past it %+v; want the first placed, the second not", early, late)
	}
}
