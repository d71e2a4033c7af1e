package spec

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/pipeline-dev/pipeline/internal/lazy"
)

// The spec statuses of LeanSpec that a session moves a spec between.
const (
	StatusDraft      = "draft"
	StatusPlanned    = "planned"
	StatusInProgress = "in-progress"
	StatusComplete   = "complete"
)

// LeanSpec's formats: a timestamp in UTC with milliseconds, and a date.
const (
	leanSpecTime = "2006-01-02T15:04:05.000Z"
	leanSpecDate = "2006-01-02"
)

// StatusEdit is what SetStatus did to a spec, or why it did nothing.
type StatusEdit struct {
	// From and To are the status before and after; equal when the spec
	// was not moved.
	From, To string
	// Content is the spec after the edit; nil when nothing changed.
	Content []byte
	// Held says why the spec was not moved as asked ("" when it was, or
	// when it has no status to move); Unchecked are the unchecked
	// checklist items that held it at completion.
	Held      string
	Unchecked []string
}

// Changed reports whether the edit changed the spec.
func (e StatusEdit) Changed() bool { return e.Content != nil }

// SetStatus moves a spec to status to (in-progress or complete) as
// LeanSpec's update command does: status, updated_at, a {status, at}
// entry appended to transitions, and, on completion, completed_at (when
// not set yet) and completed. Only a planned spec starts; a draft one is
// never moved, and one whose body holds unchecked "- [ ]" items stays
// in-progress at completion unless force. A spec without a frontmatter
// status is never written. Every byte outside the values it sets stays
// as it was: the YAML is parsed for where the keys are, and only their
// values are replaced or new lines added.
func SetStatus(content []byte, to string, now time.Time, force bool) (StatusEdit, error) {
	block, found, closed := frontmatterBlock(content)
	if !found || !closed {
		return StatusEdit{}, nil
	}
	start := bytes.Index(content, block)
	if len(block) == 0 {
		start = -1
	}
	keys, err := topLevelKeys(block)
	if err != nil || keys["status"] == nil || start < 0 {
		return StatusEdit{}, err
	}
	from := scalarText(keys["status"].Value)
	edit := StatusEdit{From: from, To: from}
	target := decideStatus(&edit, to, content[start+len(block):], force)
	if target == "" || target == from {
		return edit, nil
	}
	at := now.UTC()
	e := &frontEditor{block: block, keys: keys}
	e.setScalar("status", target, false)
	e.setScalar("updated_at", at.Format(leanSpecTime), true)
	if target == StatusComplete {
		if keys["completed_at"] == nil {
			e.setScalar("completed_at", at.Format(leanSpecTime), true)
		}
		e.setScalar("completed", at.Format(leanSpecDate), true)
	}
	if err := e.appendTransition(target, at.Format(leanSpecTime)); err != nil {
		return StatusEdit{From: from, To: from}, err
	}
	out := append(append(append([]byte{}, content[:start]...), e.result()...), content[start+len(block):]...)
	if err := checkEdit(content, out, target, at.Format(leanSpecTime)); err != nil {
		return StatusEdit{From: from, To: from}, err
	}
	edit.To, edit.Content = target, out
	return edit, nil
}

// checkEdit reads the edited spec back: its status and last transition
// are the new ones, and every key it had is still there. YAML has corners
// (a block list ending in a bare "-") where a line added at the end of
// the frontmatter would read otherwise: such a spec is left as it is.
func checkEdit(before, after []byte, status, at string) error {
	old, _ := ParseSpec("spec.md", before)
	edited, err := ParseSpec("spec.md", after)
	if err != nil || edited.Values["status"] != status {
		return fmt.Errorf("the spec's frontmatter could not be edited safely; set status: %s by hand", status)
	}
	list, _ := edited.Values["transitions"].([]any)
	var last map[string]any
	if len(list) > 0 {
		last, _ = list[len(list)-1].(map[string]any)
	}
	if last["status"] != status || last["at"] != at {
		return fmt.Errorf("the spec's transitions could not be appended to safely; set status: %s by hand", status)
	}
	for key := range old.Values {
		if _, ok := edited.Values[key]; !ok {
			return fmt.Errorf("editing the spec's frontmatter would lose its key %q; set status: %s by hand", key, status)
		}
	}
	return nil
}

// decideStatus returns the status a spec in edit.From moves to when asked
// for to ("" or From: none), setting Held when LeanSpec's rules hold it.
func decideStatus(edit *StatusEdit, to string, body []byte, force bool) string {
	from := edit.From
	switch {
	case from == StatusDraft:
		edit.Held = "a draft is not moved (LeanSpec's rule: set it to planned by hand when its work may start)"
		return ""
	case to == StatusInProgress:
		if from == StatusPlanned {
			return StatusInProgress
		}
		return ""
	case to != StatusComplete || (from != StatusPlanned && from != StatusInProgress):
		return ""
	}
	edit.Unchecked = UncheckedItems(body)
	if len(edit.Unchecked) == 0 || force {
		return StatusComplete
	}
	items := "checklist item"
	if len(edit.Unchecked) > 1 {
		items += "s"
	}
	edit.Held = fmt.Sprintf("%d %s unchecked, so not complete (pipeline complete --force completes it anyway): %s",
		len(edit.Unchecked), items, strings.Join(edit.Unchecked, "; "))
	return StatusInProgress
}

// uncheckedItem is compiled on first use, not at every start.
var uncheckedItem = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+\[ \]\s+(.*\S)`) }}

// UncheckedItems are the texts of a markdown body's unchecked "- [ ]"
// items, outside fenced code blocks.
func UncheckedItems(body []byte) []string {
	var items []string
	fence := ""
	for _, line := range strings.Split(string(body), "\n") {
		trimmed := strings.TrimSpace(line)
		if marker := fenceMarker(trimmed); marker != "" {
			switch {
			case fence == "":
				fence = marker
			case strings.HasPrefix(trimmed, fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if m := uncheckedItem.Get().FindStringSubmatch(line); m != nil {
			items = append(items, m[1])
		}
	}
	return items
}

func fenceMarker(line string) string {
	for _, m := range []string{"```", "~~~"} {
		if strings.HasPrefix(line, m) {
			return m
		}
	}
	return ""
}

// topLevelKeys parses a frontmatter block and returns its top-level
// entries by key; nil when it is not a mapping.
func topLevelKeys(block []byte) (map[string]*ast.MappingValueNode, error) {
	file, err := parser.ParseBytes(block, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("the frontmatter does not parse: %w", err)
	}
	if len(file.Docs) == 0 || file.Docs[0].Body == nil {
		return nil, nil
	}
	body := file.Docs[0].Body
	if c, ok := body.(*ast.CommentGroupNode); ok && c != nil {
		return nil, nil
	}
	keys := map[string]*ast.MappingValueNode{}
	switch n := body.(type) {
	case *ast.MappingNode:
		for _, v := range n.Values {
			keys[v.Key.GetToken().Value] = v
		}
	case *ast.MappingValueNode:
		keys[n.Key.GetToken().Value] = n
	default:
		return nil, nil
	}
	return keys, nil
}

// scalarText is a scalar's value, "" for any other node.
func scalarText(node ast.Node) string {
	switch n := node.(type) {
	case *ast.StringNode:
		return n.Value
	case nil, *ast.MappingNode, *ast.SequenceNode, *ast.MappingValueNode:
		return ""
	}
	return node.GetToken().Value
}

// frontEditor collects replacements and insertions in a frontmatter
// block, made where its parsed keys are, and applies them all at once.
type frontEditor struct {
	block []byte
	keys  map[string]*ast.MappingValueNode
	edits []byteEdit
	err   error
}

// byteEdit replaces block[at:end] with text (an insertion when at == end).
type byteEdit struct {
	at, end int
	text    string
}

// lineSpan returns the offsets of the start and the end (before its
// newline) of line n (1-based) of the block.
func (e *frontEditor) lineSpan(n int) (int, int) {
	start := 0
	for i := 1; i < n; i++ {
		next := bytes.IndexByte(e.block[start:], '\n')
		if next < 0 {
			return len(e.block), len(e.block)
		}
		start += next + 1
	}
	end := bytes.IndexByte(e.block[start:], '\n')
	if end < 0 {
		return start, len(e.block)
	}
	return start, start + end
}

// valueSpan finds the text of key's value on the key's own line: after
// the colon, up to a comment or the end of the line. ok is false when
// the key's line has no colon.
func (e *frontEditor) valueSpan(entry *ast.MappingValueNode) (at, end int, ok bool) {
	lineStart, lineEnd := e.lineSpan(entry.Key.GetToken().Position.Line)
	line := string(e.block[lineStart:lineEnd])
	colon := strings.Index(line, ":")
	if colon < 0 {
		return 0, 0, false
	}
	i := colon + 1
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	j := scalarEnd(line, i)
	return lineStart + i, lineStart + j, true
}

// scalarEnd is where a one-line scalar that begins at i ends: after its
// closing quote, or before a comment or trailing blanks.
func scalarEnd(line string, i int) int {
	if i < len(line) && (line[i] == '\'' || line[i] == '"') {
		q := line[i]
		for j := i + 1; j < len(line); j++ {
			switch {
			case line[j] == '\\' && q == '"':
				j++
			case line[j] == q && q == '\'' && j+1 < len(line) && line[j+1] == '\'':
				j++
			case line[j] == q:
				return j + 1
			}
		}
		return len(line)
	}
	j := len(line)
	if c := strings.Index(line[i:], " #"); c >= 0 {
		j = i + c
	}
	return max(i, len(strings.TrimRight(line[:j], " \t")))
}

// setScalar sets a top-level key to a one-line value, keeping the quotes
// the value was written with; a new key (quoted when quoted) is added at
// the end of the block.
func (e *frontEditor) setScalar(key, value string, quoted bool) {
	entry := e.keys[key]
	if entry == nil {
		text := value
		if quoted {
			text = "'" + value + "'"
		}
		e.insertAtEnd(key + ": " + text + "\n")
		return
	}
	at, end, ok := e.valueSpan(entry)
	if !ok || !isOneLine(entry.Value) {
		e.fail(key, "its value is not on one line")
		return
	}
	old := string(e.block[at:end])
	text := value
	switch {
	case strings.HasPrefix(old, "'") || (old == "" && quoted):
		text = "'" + value + "'"
	case strings.HasPrefix(old, `"`):
		text = `"` + value + `"`
	}
	if old == "" && at > 0 && e.block[at-1] == ':' {
		text = " " + text
	}
	e.edits = append(e.edits, byteEdit{at: at, end: end, text: text})
}

func isOneLine(node ast.Node) bool {
	switch node.(type) {
	case nil, *ast.NullNode, *ast.StringNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
		return true
	}
	return false
}

func (e *frontEditor) fail(key, why string) {
	if e.err == nil {
		e.err = fmt.Errorf("the spec's %s cannot be updated: %s", key, why)
	}
}

func (e *frontEditor) insertAtEnd(text string) {
	if n := len(e.block); n > 0 && e.block[n-1] != '\n' {
		text = "\n" + text
	}
	e.edits = append(e.edits, byteEdit{at: len(e.block), end: len(e.block), text: text})
}

// appendTransition adds {status, at} to transitions: a new item after
// the last of a block list, indented as its first; a new list when the
// key is missing, empty or [].
func (e *frontEditor) appendTransition(status, at string) error {
	entry := e.keys["transitions"]
	if entry == nil {
		e.insertAtEnd(fmt.Sprintf("transitions:\n  - status: %s\n    at: '%s'\n", status, at))
		return e.err
	}
	switch v := entry.Value.(type) {
	case nil, *ast.NullNode:
		e.replaceEmptyList(entry, "  ", status, at)
	case *ast.SequenceNode:
		if v.IsFlowStyle {
			if len(v.Values) > 0 {
				e.fail("transitions", "it is a non-empty [ ] list")
				break
			}
			e.replaceEmptyList(entry, "  ", status, at)
			break
		}
		e.appendItem(entry, v, status, at)
	default:
		e.fail("transitions", "it is not a list")
	}
	return e.err
}

// replaceEmptyList turns "transitions:" or "transitions: []" into a block
// list of one item.
func (e *frontEditor) replaceEmptyList(entry *ast.MappingValueNode, indent, status, at string) {
	valueAt, valueEnd, ok := e.valueSpan(entry)
	if !ok {
		e.fail("transitions", "its line has no colon")
		return
	}
	for valueAt > 0 && (e.block[valueAt-1] == ' ' || e.block[valueAt-1] == '\t') {
		valueAt--
	}
	_, lineEnd := e.lineSpan(entry.Key.GetToken().Position.Line)
	e.edits = append(e.edits, byteEdit{at: valueAt, end: valueEnd},
		byteEdit{at: lineEnd, end: lineEnd, text: fmt.Sprintf("\n%s- status: %s\n%s  at: '%s'", indent, status, indent, at)})
}

// appendItem adds an item after the last line of a block list, its
// "- " indented as the list's first item.
func (e *frontEditor) appendItem(entry *ast.MappingValueNode, seq *ast.SequenceNode, status, at string) {
	firstLine := seq.Start.Position.Line
	start, _ := e.lineSpan(firstLine)
	line := string(e.block[start:])
	indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
	keyIndent := entry.Key.GetToken().Position.Column - 1
	last := firstLine
	lines := strings.Split(string(e.block), "\n")
	for n := firstLine + 1; n <= len(lines); n++ {
		text := lines[n-1]
		trimmed := strings.TrimLeft(text, " \t")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		width := len(text) - len(trimmed)
		if width < keyIndent || (width == keyIndent && !strings.HasPrefix(trimmed, "- ") && trimmed != "-") {
			break
		}
		last = n
	}
	_, end := e.lineSpan(last)
	e.edits = append(e.edits, byteEdit{at: end, end: end,
		text: fmt.Sprintf("\n%s- status: %s\n%s  at: '%s'", indent, status, indent, at)})
}

// result is the block with every edit applied, in order of position
// (insertions at one place in the order they were made).
func (e *frontEditor) result() []byte {
	edits := append([]byteEdit(nil), e.edits...)
	for i := 1; i < len(edits); i++ {
		for j := i; j > 0 && edits[j].at < edits[j-1].at; j-- {
			edits[j], edits[j-1] = edits[j-1], edits[j]
		}
	}
	var out []byte
	pos := 0
	for _, ed := range edits {
		out = append(out, e.block[pos:ed.at]...)
		out = append(out, ed.text...)
		pos = ed.end
	}
	return append(out, e.block[pos:]...)
}
