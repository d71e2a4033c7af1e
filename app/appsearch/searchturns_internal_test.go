package appsearch

import (
	"os"
	"path/filepath"
	"slices"
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

	// The places the rendering found are kept: the next search reads
	// nothing of the transcript, and places its hits the same.
	again := []*Hit{hit(4), hit(5), hit(6), hit(1)}
	slices.SortFunc(again, func(a, b *Hit) int { return a.Line - b.Line })
	if read := placeInFile(st, id, rel, again, 1<<20); read != 0 {
		t.Errorf("read %d bytes with the places kept", read)
	}
	byLine := map[int]*Hit{}
	for _, h := range again {
		byLine[h.Line] = h
	}
	if h := byLine[4]; h.Turn != 1 || h.Call != 1 || h.Tool != "Bash" {
		t.Errorf("the call from the places kept: %+v", h)
	}
	if h := byLine[5]; h.Turn != 1 || h.Call != 1 || h.Tool != "Bash" {
		t.Errorf("the result from the places kept: %+v", h)
	}
	if h := byLine[6]; h.Turn != 2 || h.Call != 0 || h.Tool != "" {
		t.Errorf("the text from the places kept: %+v", h)
	}
	if h := byLine[1]; h.Turn != 0 || h.Call != 0 {
		t.Errorf("the first line from the places kept: %+v", h)
	}
	// A hit past the lines kept (the transcript grew) renders it again.
	appendLine(t, x.TranscriptPath("design", 1, "agent"), `{"type":"assistant","message":{"id":"m3","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"a.go"}}]}}`)
	grown := hit(7)
	if read := placeInFile(st, id, rel, []*Hit{grown}, 1<<20); read == 0 || grown.Turn != 2 || grown.Call != 2 || grown.Tool != "Read" {
		t.Errorf("a hit past the places kept: read %d, %+v", read, grown)
	}
	if err := os.RemoveAll(filepath.Join(st.Root, search.FolderName)); err != nil {
		t.Fatal(err)
	}

	early, late := hit(4), hit(7)
	budget := int64(len(lines[0]) + len(lines[1]) + len(lines[2]) + len(lines[3]) + 4)
	if read := placeInFile(st, id, rel, []*Hit{early, late}, budget); read != budget {
		t.Errorf("read %d bytes with a budget of %d", read, budget)
	}
	if early.Call != 1 || late.Turn != 0 {
		t.Errorf("within the budget %+v, past it %+v; want the first placed, the second not", early, late)
	}
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}
