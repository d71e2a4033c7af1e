package search

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// A hit in an agent's transcript is shown with its place in the step: the
// model's turn, and on a tool call or its result the call's number and
// tool. The place of each line is found when the line is indexed, on the
// goroutine that reads the file (placer), and kept in its chunk's row of
// docs (docs.places): a search reads it from the row, and never renders a
// transcript.
//
// placer counts as transcript.Renderer does, over the lines that are not
// transcript.Silent (as a search's rendering of a transcript counted
// them before), but decodes only what a place needs: no tool arguments,
// no texts kept. Its state is kept in the file's row (files.places), so
// that the lines appended later are placed where the last ones left off.

// placer follows a transcript's turns and tool calls, a line at a time.
// Its fields are exported for its encoding in files.places.
type placer struct {
	Format transcript.Format `json:"format,omitempty"`
	Turn   int               `json:"turn,omitempty"`
	InTurn bool              `json:"in_turn,omitempty"`
	Calls  int               `json:"calls,omitempty"`
	// CallOf and NameOf number and name the calls by the CLI's own id.
	CallOf map[string]int    `json:"call_of,omitempty"`
	NameOf map[string]string `json:"name_of,omitempty"`
	// GeminiSaid is set while Gemini streams a message that says
	// something (not only spaces).
	GeminiSaid bool `json:"gemini_said,omitempty"`
	// scanned is scanClaude's, reused from line to line.
	scanned claudeScan
}

// loadPlacer is the placer of a file's state as kept ("": at its start).
// A state that cannot be read starts again from nothing: places are a
// cache of what the transcript says.
func loadPlacer(kept []byte) *placer {
	p := &placer{}
	if len(kept) > 0 && json.Unmarshal(kept, p) != nil {
		p = &placer{}
	}
	return p
}

// keptState is what the file's row keeps of its placer: its state while
// the session runs and the file grows; nothing once it is finished (the
// tool calls' ids are most of a state, tens of bytes a call), which
// resumePlacer makes again if the file grows after all (a session
// resumed).
func keptState(p *placer, final bool) []byte {
	if final {
		return nil
	}
	return p.state()
}

// resumePlacer is the placer of a file where its row's indexing left off
// (row.offset): from the state kept, or, when none is, by placing the
// lines indexed before again.
func resumePlacer(f io.ReaderAt, row fileRow) (*placer, error) {
	if row.offset == 0 || len(row.places) > 0 {
		return loadPlacer(row.places), nil
	}
	p := &placer{}
	lines := bufio.NewReaderSize(io.NewSectionReader(f, 0, row.offset), 256<<10)
	for {
		line, err := lines.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = lines.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			p.line(bytes.TrimSuffix(line, []byte{'\n'}))
		}
		if errors.Is(err, io.EOF) {
			return p, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *placer) state() []byte {
	b, _ := json.Marshal(p)
	return b
}

// line places one line of the transcript (without its line break): the
// turn it leaves the step in, and the call and tool of its last tool call
// or result.
func (p *placer) line(line []byte) (turn, call int, tool string) {
	if !transcript.Silent(line) {
		call, tool = p.items(bytes.TrimRight(line, "\r\n"))
	}
	return p.Turn, call, tool
}

// items follows transcript.Renderer.Line.
func (p *placer) items(line []byte) (call int, tool string) {
	if bytes.HasPrefix(line, []byte(transcript.StderrPrefix)) {
		return 0, ""
	}
	trimmed := bytes.TrimSpace(line)
	if p.Format == transcript.Plain || len(trimmed) == 0 || trimmed[0] != '{' {
		return 0, ""
	}
	typ, ok := leadingType(trimmed)
	if !ok && p.Format == transcript.Claude && scanClaude(trimmed, &p.scanned) {
		// A line whose type is not first (json.Marshal sorts the keys):
		// read whole by the scan.
		return p.claudeScanned(&p.scanned)
	}
	if !ok || p.Format == transcript.Detect {
		// Decoded whole, as the renderer reads every line's type; the
		// CLIs write it first, where leadingType reads it without
		// decoding the line.
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(trimmed, &head) != nil {
			return 0, ""
		}
		typ = head.Type
	}
	if typ == "" {
		return 0, ""
	}
	if p.Format == transcript.Detect {
		p.Format = detectFormat(typ, trimmed)
	}
	// A line of a type that places nothing is not decoded: the renderer
	// gives it no turn, nor a call, whatever it holds.
	switch p.Format {
	case transcript.Claude:
		return p.claude(typ, trimmed)
	case transcript.Gemini:
		return p.gemini(typ, trimmed)
	case transcript.Codex:
		return p.codex(typ, trimmed)
	}
	return 0, ""
}

// leadingType is transcript's: the type of a line that starts
// {"type":"…", as the three CLIs write every line.
func leadingType(line []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"type":"`))
	if !ok {
		return "", false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

// detectFormat is transcript's detect.
func detectFormat(typ string, line []byte) transcript.Format {
	switch {
	case strings.HasPrefix(typ, "thread.") || strings.HasPrefix(typ, "turn.") || strings.HasPrefix(typ, "item."):
		return transcript.Codex
	case typ == "stream_event" || typ == "system" || typ == "assistant" || typ == "user":
		return transcript.Claude
	case typ == "init" || typ == "message" || typ == "tool_use" || typ == "tool_result":
		return transcript.Gemini
	case typ == "result" && bytes.Contains(line, []byte(`"stats"`)):
		return transcript.Gemini
	case typ == "result":
		return transcript.Claude
	}
	return transcript.Detect
}

// The renderer decodes whole lines into its types; a place needs few of
// their values. These types stand for the others: each accepts, and
// rejects, what the renderer's type there does, and keeps nothing of
// it, so that a line the renderer cannot read is one the placer cannot
// either, and the texts are not copied.
type (
	// object is a map[string]any: an object or null.
	object struct{}
	// anyValue is a json.RawMessage: any value.
	anyValue struct{}
	// str is a string: a string or null.
	str struct{}
	// saysWords is a string of which a place needs only whether it says
	// anything (not only spaces).
	saysWords bool
)

func (*anyValue) UnmarshalJSON([]byte) error { return nil }

var errNotString = errors.New("not a string")

func (*str) UnmarshalJSON(b []byte) error {
	if b[0] != '"' && string(b) != "null" {
		return errNotString
	}
	return nil
}

func (w *saysWords) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		return nil
	case b[0] != '"':
		return errNotString
	case bytes.IndexByte(b, '\\') < 0:
		*w = len(bytes.TrimSpace(b[1:len(b)-1])) > 0
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*w = strings.TrimSpace(s) != ""
	return nil
}

// said starts or continues the model's turn.
func (p *placer) said() {
	if !p.InTurn {
		p.Turn++
		p.InTurn = true
	}
}

func (p *placer) called(id, tool string) (int, string) {
	p.said()
	p.Calls++
	if id != "" {
		if p.CallOf == nil {
			p.CallOf, p.NameOf = map[string]int{}, map[string]string{}
		}
		p.CallOf[id], p.NameOf[id] = p.Calls, tool
	}
	return p.Calls, tool
}

func (p *placer) answered(id string) (int, string) {
	p.InTurn = false
	return p.CallOf[id], p.NameOf[id]
}

func (p *placer) text(says saysWords) {
	if says {
		p.said()
	}
}

// claudeLine is a line of Claude Code's, typed as the renderer's; its
// message decoded in the same pass (any error there leaves the line's
// place as it was, as the renderer's decoding it after does).
type claudeLine[M any] struct {
	Subtype           string   `json:"subtype"`
	Cwd               string   `json:"cwd"`
	APIMessageID      string   `json:"api_message_id"`
	Event             anyValue `json:"event"`
	Message           M        `json:"message"`
	IsAPIErrorMessage bool     `json:"is_api_error_message"`
	Attempt           int      `json:"attempt"`
	MaxRetries        int      `json:"max_retries"`
	ErrorStatus       int      `json:"error_status"`
	IsError           bool     `json:"is_error"`
	Result            str      `json:"result"`
	Errors            []str    `json:"errors"`
	TotalCostUSD      float64  `json:"total_cost_usd"`
	Usage             *struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type claudeMessage struct {
	ID      string        `json:"id"`
	Content []claudeBlock `json:"content"`
}

type claudeBlock struct {
	Type      string    `json:"type"`
	Text      saysWords `json:"text"`
	Thinking  saysWords `json:"thinking"`
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Input     object    `json:"input"`
	ToolUseID string    `json:"tool_use_id"`
	Content   anyValue  `json:"content"`
	IsError   bool      `json:"is_error"`
}

func (p *placer) claude(typ string, line []byte) (call int, tool string) {
	switch typ {
	case "assistant", "user":
	case "result":
		// An error's result (the others are silent) ends the turn.
		var l claudeLine[anyValue]
		if json.Unmarshal(line, &l) == nil {
			p.InTurn = false
		}
		return 0, ""
	default:
		return 0, ""
	}
	if scanClaude(line, &p.scanned) {
		return p.claudeScanned(&p.scanned)
	}
	var l claudeLine[*claudeMessage]
	if json.Unmarshal(line, &l) != nil || l.Message == nil {
		return 0, ""
	}
	for _, b := range l.Message.Content {
		switch {
		case typ == "user":
			if b.Type == "tool_result" {
				call, tool = p.answered(b.ToolUseID)
			}
		case l.IsAPIErrorMessage && b.Type == "text":
		case b.Type == "text":
			p.text(b.Text)
		case b.Type == "thinking":
			p.text(b.Thinking)
		case b.Type == "tool_use":
			call, tool = p.called(b.ID, b.Name)
		}
	}
	return call, tool
}

// claudeScanned places an assistant or user line as scanClaude read it,
// as claude does a decoded one.
func (p *placer) claudeScanned(l *claudeScan) (call int, tool string) {
	typ := string(l.typ)
	if typ != "assistant" && typ != "user" {
		// No other type places (a result's has fields the scan leaves
		// to encoding/json).
		return 0, ""
	}
	for _, b := range l.blocks {
		switch {
		case typ == "user":
			if string(b.typ) == "tool_result" {
				call, tool = p.answered(string(b.toolUseID))
			}
		case l.apiError && string(b.typ) == "text":
		case string(b.typ) == "text":
			p.text(saysWords(b.saysText))
		case string(b.typ) == "thinking":
			p.text(saysWords(b.saysThinking))
		case string(b.typ) == "tool_use":
			call, tool = p.called(string(b.id), string(b.name))
		}
	}
	return call, tool
}

type geminiLine struct {
	Role       string    `json:"role"`
	Content    saysWords `json:"content"`
	Delta      bool      `json:"delta"`
	ToolName   string    `json:"tool_name"`
	ToolID     string    `json:"tool_id"`
	Parameters object    `json:"parameters"`
	Status     string    `json:"status"`
	Output     str       `json:"output"`
	Message    str       `json:"message"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"stats"`
}

func (p *placer) gemini(typ string, line []byte) (call int, tool string) {
	var l geminiLine
	if json.Unmarshal(line, &l) != nil {
		return 0, ""
	}
	if typ == "message" && l.Role == "assistant" {
		p.GeminiSaid = p.GeminiSaid || bool(l.Content)
		if !l.Delta {
			p.geminiFlush()
		}
		return 0, ""
	}
	p.geminiFlush()
	switch typ {
	case "tool_use":
		return p.called(l.ToolID, l.ToolName)
	case "tool_result":
		return p.answered(l.ToolID)
	case "result":
		p.InTurn = false
	}
	return 0, ""
}

func (p *placer) geminiFlush() {
	if p.GeminiSaid {
		p.said()
	}
	p.GeminiSaid = false
}

type codexLine struct {
	Item  *codexItem `json:"item"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
	Message str `json:"message"`
	Error   *struct {
		Message str `json:"message"`
	} `json:"error"`
}

type codexItem struct {
	ID               string    `json:"id"`
	Type             string    `json:"type"`
	Text             saysWords `json:"text"`
	Command          string    `json:"command"`
	AggregatedOutput str       `json:"aggregated_output"`
	ExitCode         *int      `json:"exit_code"`
	Status           string    `json:"status"`
	Server           string    `json:"server"`
	Tool             string    `json:"tool"`
	Arguments        object    `json:"arguments"`
	Result           *struct {
		Content anyValue `json:"content"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Query   string `json:"query"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Items []struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	} `json:"items"`
	Message string `json:"message"`
}

func (p *placer) codex(typ string, line []byte) (call int, tool string) {
	var l codexLine
	if json.Unmarshal(line, &l) != nil {
		return 0, ""
	}
	switch typ {
	case "item.started":
		if it := l.Item; it != nil && codexIsCall(it.Type) && (it.Type != "command_execution" || it.Command != "") {
			return p.called(it.ID, codexTool(it))
		}
	case "item.completed":
		if l.Item != nil {
			return p.codexCompleted(l.Item)
		}
	case "turn.completed":
		p.InTurn = false
	}
	return 0, ""
}

func codexIsCall(typ string) bool {
	switch typ {
	case "command_execution", "mcp_tool_call", "web_search", "file_change":
		return true
	}
	return false
}

// codexTool is the tool the renderer names a call of Codex's.
func codexTool(it *codexItem) string {
	switch it.Type {
	case "command_execution":
		return "shell"
	case "mcp_tool_call":
		return it.Server + "." + it.Tool
	case "web_search":
		return "web_search"
	}
	return "edit"
}

func (p *placer) codexCompleted(it *codexItem) (call int, tool string) {
	switch it.Type {
	case "agent_message", "reasoning":
		p.text(it.Text)
		return 0, ""
	case "todo_list":
		return p.called(it.ID, "todo_list")
	}
	if !codexIsCall(it.Type) {
		return 0, ""
	}
	if _, seen := p.CallOf[it.ID]; !seen {
		call, tool = p.called(it.ID, codexTool(it))
	}
	failed := it.Status == "failed" || it.Status == "declined"
	if (it.Type == "file_change" || it.Type == "web_search") && !failed {
		p.InTurn = false
		return call, tool
	}
	return p.answered(it.ID)
}

// chunkPlaces are the places of a chunk's lines: the turn before its
// first line, and each line whose place is more than the turn of the
// line before (a new turn, a call).
type chunkPlaces struct {
	start  int
	points []Place // Line counts from the chunk's first line, 0
}

// at is the place of the chunk's line i (0 the first).
func (c *chunkPlaces) at(i int) (turn, call int, tool string) {
	turn = c.start
	for _, pt := range c.points {
		if pt.Line > i {
			break
		}
		turn = pt.Turn
		call, tool = 0, ""
		if pt.Line == i {
			call, tool = pt.Call, pt.Tool
		}
	}
	return turn, call, tool
}

// encode writes the places as varints: the start turn, the tools named
// (their number, then each one's length and name), then per point its
// line after the one before, its turn after the one before (turns only
// grow), its call against the one before (zigzag: a result's call is
// often the line before's) and its tool's number in the list (0: none).
// A chunk that is all of one turn is two bytes; a point, most often 4.
func (c *chunkPlaces) encode(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(c.start))
	var tools []string
	for _, pt := range c.points {
		if pt.Tool != "" && !slices.Contains(tools, pt.Tool) {
			tools = append(tools, pt.Tool)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(tools)))
	for _, t := range tools {
		b = binary.AppendUvarint(b, uint64(len(t)))
		b = append(b, t...)
	}
	line, turn, call := 0, c.start, 0
	for _, pt := range c.points {
		b = binary.AppendUvarint(b, uint64(pt.Line-line))
		b = binary.AppendUvarint(b, uint64(pt.Turn-turn))
		b = binary.AppendVarint(b, int64(pt.Call-call))
		tool := 0
		if pt.Tool != "" {
			tool = slices.Index(tools, pt.Tool) + 1
		}
		b = binary.AppendUvarint(b, uint64(tool))
		line, turn, call = pt.Line, pt.Turn, pt.Call
	}
	return b
}

func decodeChunkPlaces(b []byte) (chunkPlaces, bool) {
	var c chunkPlaces
	r := &byteReader{b: b}
	c.start = int(r.uvarint())
	n := r.uvarint()
	if n > uint64(len(r.b)) { // each tool takes a byte at least
		return c, false
	}
	tools := make([]string, n)
	for i := range tools {
		tools[i] = string(r.bytes(int(r.uvarint())))
	}
	line, turn, call := 0, c.start, 0
	for r.err == nil && len(r.b) > 0 {
		line += int(r.uvarint())
		turn += int(r.uvarint())
		call += int(r.varint())
		pt := Place{Line: line, Turn: turn, Call: call}
		if i := r.uvarint(); i > 0 && i <= uint64(len(tools)) {
			pt.Tool = tools[i-1]
		} else if i > 0 {
			r.err = errPlaces
		}
		c.points = append(c.points, pt)
	}
	return c, r.err == nil
}

// Place is where a line of a transcript is in its step: the model's
// turn, and on a tool call or its result the call's number and tool.
type Place struct {
	Line, Turn, Call int
	Tool             string
}

var errPlaces = errors.New("not the places of a chunk")

// byteReader reads varints from b; the first error stays.
type byteReader struct {
	b   []byte
	err error
}

func (r *byteReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = errPlaces, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *byteReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = errPlaces, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *byteReader) bytes(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.err, r.b = io.ErrUnexpectedEOF, nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
