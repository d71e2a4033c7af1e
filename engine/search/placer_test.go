package search

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/transcript"
	"github.com/pipeline-dev/pipeline/internal/transcriptgen"
)

// renderedPlaces places each line as a search did before the index kept
// places: the transcript rendered from its first line by
// transcript.Renderer, the silent lines skipped.
func renderedPlaces(lines [][]byte) []Place {
	r := transcript.New(transcript.Detect, "")
	turn := 0
	out := make([]Place, len(lines))
	for i, line := range lines {
		call, tool := 0, ""
		if transcript.Silent(line) {
			line = nil
		}
		for _, it := range r.Line(line) {
			turn = max(turn, it.Turn)
			if it.Kind == transcript.ToolCall || it.Kind == transcript.ToolResult {
				call, tool = it.Call, it.Tool
			}
		}
		out[i] = Place{Line: i + 1, Turn: turn, Call: call, Tool: tool}
	}
	return out
}

// indexedPlaces places each line as the index does: the chunker's placer,
// the lines up to cut indexed by one update and the rest by the next
// (the placer's state kept between them), each chunk's places encoded
// and decoded as docs.places keeps them.
func indexedPlaces(t *testing.T, lines [][]byte, cut int) []Place {
	t.Helper()
	var out []Place
	state := []byte(nil)
	next := int64(1)
	for _, part := range [][][]byte{lines[:cut], lines[cut:]} {
		var data []byte
		for _, l := range part {
			data = append(append(data, l...), '\n')
		}
		c := chunker{final: true, line: next, placer: loadPlacer(state)}
		c.emit = func(line, _, _ int64, body, places []byte) error {
			kept, ok := decodeChunkPlaces(places)
			if !ok {
				t.Fatalf("the places of the chunk at line %d do not decode", line)
			}
			for i := range bytes.Count(body, []byte{'\n'}) + 1 {
				turn, call, tool := kept.at(i)
				out = append(out, Place{Line: int(line) + i, Turn: turn, Call: call, Tool: tool})
			}
			return nil
		}
		if _, _, err := c.read(bytes.NewReader(data), 1<<30); err != nil {
			t.Fatal(err)
		}
		state, next = c.placer.state(), c.line
	}
	return out
}

// edgeLines are lines of each format the fixtures lack: a line on
// standard error, plain text, a blank line, deltas, an API error, a
// result to a call never seen, a message of spaces, Codex's file change
// and to-do list, Gemini's message streamed in deltas.
var edgeLines = map[string]string{
	"claude-edges": `{"type":"system","subtype":"init","cwd":"/w"}
{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"Look"}}}
[stderr] something went wrong
not json at all

{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"   "}]}}
{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"a"}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a.go"},{"type":"tool_result","tool_use_id":"t9","content":"?"}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"x"}]}]}}
{"type":"assistant","is_api_error_message":true,"message":{"id":"m2","content":[{"type":"text","text":"API Error: 529"}]}}
{"type":"assistant","message":{"id":"m3","content":[{"type":"tool_use","id":"t3","name":"Bash","input":"not an object"}]}}
{"type":"assistant","message":{"id":"m4","content":[{"type":"thinking","thinking":"hmm"}]}}
{"type":"result","subtype":"error_max_turns","is_error":true,"errors":["too many"]}
{"type":"assistant","message":{"id":"m5","content":[{"type":"text","text":"Again."}]}}
{"type":"user","message":{"content":"a plain answer"}}
{"type":"result","subtype":"success","result":"done"}`,
	// Lines the placer's scan must read as encoding/json does, or leave
	// to it: keys in other case, twice, out of order; escapes; values of
	// other types; lines that are not JSON.
	"claude-scan": `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"\n\t"}]}}
{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"\u00a0"}]}}
{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"\u0041"}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"x","content":"a"}]}}
{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t\u0031","name":"Bash","input":{}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]}}
{"message":{"content":[{"text":"sorted keys","type":"text"}],"id":"m2"},"session_id":"s","type":"assistant"}
{"message":{"content":[{"id":"t2","input":{"command":"ls"},"name":"Read","type":"tool_use"}]},"type":"assistant"}
{"message":{"content":[{"content":"x","tool_use_id":"t2","type":"tool_result"}]},"type":"user"}
{"type":"assistant","Message":{"id":"m3","content":[{"type":"text","text":"upper case key"}]}}
{"type":"user","message":{"content":[{"Type":"tool_result","tool_use_id":"t2","content":"a"}]}}
{"type":"assistant","message":{"id":"m3","content":[{"type":"tool_use","id":"t3","name":"Grep","input":{}}]},"message":{"content":[{"type":"text","text":"twice"}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t3","content":"a","is_error":"yes"}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t3","content":"a"}]}} trailing
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t3","content":"a"}]}
{"type":"assistant","message":{"id":7,"content":[{"type":"text","text":"an id of a number"}]}}
{"type":"assistant","message":{"id":"m4","content":[null,{"type":"text","text":"after a null"}]}}
{"type":"assistant","message":{"id":"m4","content":[{"type":"tool_use","id":"t4","name":"Bash","input":null}]}}
{"type":"user","message":{"content":null}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t4","content":[[[[1e5,-0.5,true,false,null,{"a":[]}]]]]}]}}
{"type":"assistant","message":{"id":"m5","content":[{"type":"text","text":"bad number","x":01}]}}
{"type":"assistant","message":{"id":"m5","content":[{"type":"text","text":"bad literal","x":tru}]}}
{"type":"assistant","message":{"id":"m5","content":[{"type":"text","text":"a control char` + "\x01" + `"}]}}
{"type":"assistant","message":{"id":"m6","content":[{"type":"text","text":"","thinking":"text is empty"}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t4","content":"done"}]}}
{"type":"assistant","message":{"id":"m7","content":[{"type":"thinking","thinking":"deep"},{"type":"text","text":"last"}]}}`,
	"codex-edges": `{"type":"thread.started","thread_id":"T"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Plan."}}
{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"a.go","kind":"update"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"todo_list","items":[{"text":"a","completed":true}]}}
{"type":"item.completed","item":{"id":"item_3","type":"web_search","query":"go","status":"failed"}}
{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"gh","tool":"issues","arguments":{"q":1},"status":"completed"}}
{"type":"item.completed","item":{"id":"","type":"command_execution","command":"ls","exit_code":0,"status":"completed"}}
{"type":"turn.failed","error":{"message":"boom"}}
{"type":"error","message":"bad"}
{"type":"item.completed","item":{"id":"item_5","type":"reasoning","text":"  "}}`,
	"gemini-edges": `{"type":"init","session_id":"g1","model":"m"}
{"type":"message","role":"assistant","content":"  ","delta":true}
{"type":"tool_use","tool_name":"read_file","tool_id":"r1","parameters":{"absolute_path":"/w/a"}}
{"type":"message","role":"assistant","content":"Whole.","delta":false}
{"type":"tool_result","tool_id":"r1","status":"success","output":"x"}
{"type":"message","role":"assistant","content":" ","delta":true}
{"type":"error","message":"rate"}
{"type":"message","role":"assistant","content":"Next ","delta":true}
{"type":"error","message":"quota"}
{"type":"tool_result","tool_id":"nope","status":"error","error":{"message":"x"}}
{"type":"result","status":"error","error":{"message":"failed"}}
{"type":"message","role":"assistant","content":"After.","delta":true}`,
}

// The index places each line of a transcript where rendering it from its
// first line does, for Claude's, Gemini's and Codex's transcripts (the
// fixtures the renderer is tested on, and lines they lack), whether the
// transcript is indexed at once or in two updates at any line.
func TestPlacesAgreeWithTheRenderer(t *testing.T) {
	fixtures := map[string]string{}
	for _, name := range []string{"claude-tools", "gemini-tools", "codex-tools"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "internal", "transcript", "testdata", name+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		fixtures[name] = string(data)
	}
	for name, text := range edgeLines {
		fixtures[name] = text
	}
	// Generated lines: their keys sorted, the type last.
	gen := transcriptgen.New(5)
	var generated []byte
	for range 400 {
		generated = gen.Line(generated, "s")
	}
	fixtures["generated"] = string(generated)
	for name, text := range fixtures {
		var lines [][]byte
		for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			lines = append(lines, []byte(l))
		}
		want := renderedPlaces(lines)
		if want[len(want)-1].Turn < 2 {
			t.Fatalf("%s: the fixture has %d turns; the test wants more than one", name, want[len(want)-1].Turn)
		}
		for cut := 0; cut <= len(lines); cut += 1 + len(lines)/40 {
			got := indexedPlaces(t, lines, cut)
			if len(got) != len(want) {
				t.Fatalf("%s, cut at %d: %d lines placed, want %d", name, cut, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%s, cut at %d: line %d placed %+v, the renderer %+v", name, cut, i+1, got[i], want[i])
				}
			}
		}
	}
}

// A search reads a hit's place from its chunk's row: a hit on a tool's
// result in a transcript of more than a chunk is in its turn and call,
// after the transcript grew (while its session ran: from the state kept;
// after it finished: the lines before placed again), and with the
// transcript's file gone.
func TestHitPlacedFromTheIndex(t *testing.T) {
	for _, status := range []string{"running", "completed"} {
		t.Run(status, func(t *testing.T) { testHitPlacedFromTheIndex(t, status) })
	}
}

func testHitPlacedFromTheIndex(t *testing.T, status string) {
	p := newProject(t)
	x := p.session("s1", status, nil)
	var b strings.Builder
	for i := range chunkLines + 5 {
		b.WriteString(`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t` + string(rune('a'+i%26)) + `","name":"Bash","input":{"command":"ls"}}]}}` + "\n")
		b.WriteString(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t` + string(rune('a'+i%26)) + `","content":"filler"}]}}` + "\n")
	}
	p.write(x, "build", 1, "agent", false, b.String())
	ix := p.open()
	update(t, ix)
	p.write(x, "build", 1, "agent", false, `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"last","name":"Grep","input":{}}]}}`+"\n"+
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"last","content":"quokka"}]}}`+"\n")
	update(t, ix)
	var kept []byte
	if err := ix.shards[0].db.QueryRow(`SELECT places FROM files WHERE rel = ?`, "transcripts/build/1-agent.log").Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if (len(kept) > 0) != (status == "running") {
		t.Errorf("a %s session's transcript keeps a state of %d bytes", status, len(kept))
	}
	hits := find(t, ix, Query{Text: "quokka"})
	if len(hits) != 1 || hits[0].Place.Line == 0 {
		t.Fatalf("hits %+v: want one, placed", hits)
	}
	calls := chunkLines + 5 + 1
	if pl := hits[0].Place; pl.Line != 2*calls || pl.Turn != calls || pl.Call != calls || pl.Tool != "Grep" {
		t.Errorf("placed %+v; want line %d, turn and call %d, Grep", pl, 2*calls, calls)
	}
	if err := os.Remove(x.TranscriptPath("build", 1, "agent")); err != nil {
		t.Fatal(err)
	}
	if hits := find(t, ix, Query{Text: "quokka"}); len(hits) != 1 || hits[0].Place.Call != calls {
		t.Errorf("with the transcript gone: %+v; want the place from the row", hits)
	}
}

// An index of the schema before places is rebuilt once, with a line that
// says it is of another format (not corrupt), and nothing kept aside:
// the places schema 3 kept beside it go too.
func TestOutdatedIndexRebuiltOnce(t *testing.T) {
	p := newProject(t)
	x := p.session("s1", "completed", nil)
	p.write(x, "build", 1, "agent", false, "quokka\n")
	ix := p.open()
	update(t, ix)
	if _, err := ix.shards[0].db.Exec(`UPDATE meta SET value = '3' WHERE key = 'schema'`); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	path := Path(p.st.Root)
	old := filepath.Join(filepath.Dir(path), "places", "s1")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	var warned strings.Builder
	again, err := Open(p.st, Options{Warn: &warned})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if w := warned.String(); !strings.Contains(w, "of another format (schema 3; this pipeline's is "+schemaVersion+"): rebuilding it once") ||
		strings.Contains(w, "corrupt") || strings.Count(w, "\n") != 1 {
		t.Errorf("warned %q; want one line: of another format, rebuilt, not corrupt", w)
	}
	if again.Rebuilt == "" {
		t.Error("Rebuilt not set")
	}
	for _, gone := range []string{path + asideSuffix, filepath.Dir(old)} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("%s is left", gone)
		}
	}
	if hits := (func() []Hit { update(t, again); return find(t, again, Query{Text: "quokka"}) })(); len(hits) != 1 {
		t.Errorf("after the rebuild: %d hits", len(hits))
	}
	again.Close()
	warned.Reset()
	third, err := Open(p.st, Options{Warn: &warned})
	if err != nil {
		t.Fatal(err)
	}
	third.Close()
	if warned.Len() != 0 || third.Rebuilt != "" {
		t.Errorf("opened again: warned %q, rebuilt %q", warned.String(), third.Rebuilt)
	}
}

// FuzzPlacesAgree: any line, after a tool call and before its result,
// is placed by the index where the renderer places it.
func FuzzPlacesAgree(f *testing.F) {
	for _, name := range []string{"claude-edges", "claude-scan"} {
		for _, l := range strings.Split(edgeLines[name], "\n") {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n") {
			return
		}
		lines := [][]byte{
			[]byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}`),
			[]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]}}`),
			[]byte(line),
			[]byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]}}`),
			[]byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"after"}]}}`),
		}
		want := renderedPlaces(lines)
		got := indexedPlaces(t, lines, 0)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("line %d placed %+v, the renderer %+v", i+1, got[i], want[i])
			}
		}
	})
}

// A chunk's places are read back as written: calls that go back (a
// result of an earlier call), tools named once, a chunk of one turn in
// two bytes; places cut short are not read.
func TestChunkPlacesEncoding(t *testing.T) {
	c := chunkPlaces{start: 3, points: []Place{
		{Line: 0, Turn: 4, Call: 7, Tool: "Bash"}, {Line: 1, Turn: 4, Call: 8, Tool: "Read"},
		{Line: 2, Turn: 4, Call: 7, Tool: "Bash"}, {Line: 5, Turn: 5}, {Line: 31, Turn: 300, Call: 1000, Tool: "mcp.tool"},
	}}
	b := c.encode(nil)
	got, ok := decodeChunkPlaces(b)
	if !ok || got.start != c.start || len(got.points) != len(c.points) {
		t.Fatalf("decoded %+v, %v; want %+v", got, ok, c)
	}
	for i := range c.points {
		if got.points[i] != c.points[i] {
			t.Errorf("point %d: %+v, want %+v", i, got.points[i], c.points[i])
		}
	}
	if turn, call, tool := got.at(3); turn != 4 || call != 0 || tool != "" {
		t.Errorf("line 3 (no point): %d %d %q", turn, call, tool)
	}
	if one := (&chunkPlaces{start: 9}).encode(nil); len(one) != 2 {
		t.Errorf("a chunk of one turn takes %d bytes", len(one))
	}
	if _, ok := decodeChunkPlaces(b[:len(b)-3]); ok {
		t.Error("places cut short were read")
	}
}
