package spec

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/pipeline-dev/pipeline/internal/lazy"
	"github.com/pipeline-dev/pipeline/triggers"
)

// decoder turns a YAML tree into the model's types. It walks the tree itself
// rather than calling a generic unmarshaller so that it can report every
// problem (not only the first), name unknown keys with a "did you mean", and
// keep the position of every value for provenance and for expression errors.
type decoder struct {
	file string
	// lines of the whole file, for snippets and expression positions.
	lines []string
	// lineOffset is added to the parser's lines: frontmatter starts below
	// its opening ---.
	lineOffset int
	problems   problems
	anchors    map[string]ast.Node
	// positions maps a value's path (phases[1].pause_when.tokens) to where
	// it was written.
	positions map[string]Position
	// brokenAgents holds the places of agents already reported, so that
	// the steps using them are not reported once more each.
	brokenAgents map[Position]bool
	// sizes holds what each anchored node stands for, and expanded what
	// the aliases counted so far add up to (see expand).
	sizes    map[ast.Node]size
	counted  map[*ast.AliasNode]bool
	expanded size
	// measuring counts the anchors whose value measure is inside, by
	// name; recursive holds the aliases found inside their own anchor.
	measuring map[string]int
	recursive map[*ast.AliasNode]bool
	// keyAnchors holds the anchors written on keys (see unwrapKey).
	keyAnchors map[string]*ast.AnchorNode
	// templates holds where each text of kind template was written.
	templates map[string]Expr
	// numbers holds whole numbers as written, by path, for messages.
	numbers map[string]string
	// runeLines caches lines of the file as characters (see runeLine).
	runeLines map[int][]rune
	// reported holds the place of every problem, those past maxProblems
	// too, so that a mistake already told is not told again.
	reported map[Position]bool
	// programs are the programs named by a path (./bin/agent) where they
	// were written: Load looks for them (programs.go).
	programs []programRef
}

// byteOrderMark is what some editors write at the start of a UTF-8 file.
// It is not part of the text: it is dropped before the file is read.
const byteOrderMark = "\ufeff"

func newDecoder(file string, content []byte, lineOffset int) *decoder {
	return &decoder{
		file:         file,
		lines:        strings.Split(strings.TrimPrefix(string(content), byteOrderMark), "\n"),
		lineOffset:   lineOffset,
		anchors:      map[string]ast.Node{},
		positions:    map[string]Position{},
		brokenAgents: map[Position]bool{},
		sizes:        map[ast.Node]size{},
		counted:      map[*ast.AliasNode]bool{},
		measuring:    map[string]int{},
		recursive:    map[*ast.AliasNode]bool{},
		reported:     map[Position]bool{},
		numbers:      map[string]string{},
		templates:    map[string]Expr{},
		keyAnchors:   map[string]*ast.AnchorNode{},
	}
}

// parse parses one YAML document; it returns nil after recording a problem.
// what names the text in messages.
func (d *decoder) parse(yamlText []byte, what string) ast.Node {
	if d.tooLarge(int64(len(yamlText)), what) {
		return nil
	}
	tokens := lexer.Tokenize(string(yamlText))
	if over := scanLimits(tokens); over != nil && tokens.InvalidToken() == nil {
		d.report(over.at, over.message, over.hint)
		return nil
	}
	f, err := parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			message, hint := syntaxMessage(ye.GetMessage())
			if pos := d.position(ye.GetToken()); afterStar(d.runeLine(pos.Line), pos.Column) {
				hint = quoteGlobHint
			}
			d.report(ye.GetToken(), message, hint)
		} else {
			d.problems.add(Problem{Position: Position{File: d.file, Line: 1 + d.lineOffset, Column: 1},
				Message: "YAML syntax: " + err.Error()})
		}
		return nil
	}
	var bodies []ast.Node
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			bodies = append(bodies, doc.Body)
			d.measure(doc.Body, map[string]size{})
		}
	}
	if len(bodies) > 1 {
		d.reportNode(bodies[1], "a second YAML document (after ---) is not allowed here",
			"keep one document in the file")
	}
	if len(bodies) == 0 {
		return nil
	}
	return bodies[0]
}

// quoteGlobHint is the hint for a text such as **/*.md written without
// quotes: YAML reads a * that starts a value as an alias.
const quoteGlobHint = `quote a text that starts with *, such as "**/*.md": unquoted, YAML reads *name as an alias`

// afterStar reports whether the character before column is a *: the
// parser stumbled on what followed the * of an alias, as in **/*.md.
func afterStar(line []rune, column int) bool {
	return column >= 2 && column-2 < len(line) && line[column-2] == '*'
}

// syntaxMessage rewords the YAML parser's messages that name a character
// or a grammar rule rather than the mistake.
func syntaxMessage(message string) (string, string) {
	switch {
	case strings.Contains(message, "'\t'"):
		return "YAML syntax: a tab is used for indentation", "YAML indents with spaces only; replace the tab with spaces"
	case strings.Contains(message, "value is not allowed in this context"):
		return "YAML syntax: a value is not allowed here", "check the indentation: a key's value goes on the same line or indented below it"
	}
	return "YAML syntax: " + message, "check the indentation and the quoting on this line or the one before"
}

func (d *decoder) position(tk *token.Token) Position {
	if tk == nil {
		return Position{File: d.file, Line: 1 + d.lineOffset, Column: 1}
	}
	pos := Position{File: d.file, Line: tk.Position.Line + d.lineOffset, Column: max(tk.Position.Column, 1)}
	if tk.Type == token.StringType {
		return d.plainStart(tk, pos)
	}
	return pos
}

// plainStart is where a plain scalar written over several lines starts.
// The parser places some of them (one that runs to the end of the file,
// one whose next lines start with "- ") at their end, or on the line
// after: a message would then point at the last line of the value rather
// than at the key it belongs to. The first line of the scalar as written
// (its Origin) is looked for at pos, then on the lines the scalar can
// have started on.
func (d *decoder) plainStart(tk *token.Token, pos Position) Position {
	text := strings.TrimRight(strings.TrimLeft(tk.Origin, " \t\r\n"), " \t\r\n")
	first, rest, multiLine := strings.Cut(text, "\n")
	if !multiLine {
		return pos
	}
	first = strings.TrimRight(first, " \t\r")
	want := []rune(first)
	if line := d.runeLine(pos.Line); pos.Column-1+len(want) <= len(line) && string(line[pos.Column-1:pos.Column-1+len(want)]) == first {
		return pos
	}
	lines := strings.Count(rest, "\n") + 2
	for l := pos.Line - lines + 1; l >= pos.Line-lines-1 && l >= 1; l-- {
		line := []rune(strings.TrimRight(d.sourceLine(l), " \t\r"))
		if len(line) >= len(want) && string(line[len(line)-len(want):]) == first {
			return Position{File: d.file, Line: l, Column: len(line) - len(want) + 1}
		}
	}
	return pos
}

// nodePosition is where a node starts: for a mapping, its first key.
func (d *decoder) nodePosition(node ast.Node) Position {
	switch n := node.(type) {
	case *ast.MappingNode:
		if n.IsFlowStyle && n.Start != nil {
			return d.position(n.Start)
		}
		if len(n.Values) > 0 && n.Values[0].Key != nil {
			return d.position(n.Values[0].Key.GetToken())
		}
	case *ast.MappingValueNode:
		if n.Key != nil {
			return d.position(n.Key.GetToken())
		}
	}
	return d.position(node.GetToken())
}

func (d *decoder) sourceLine(line int) string {
	if line < 1 || line > len(d.lines) {
		return ""
	}
	return strings.TrimRight(d.lines[line-1], "\r")
}

func (d *decoder) report(tk *token.Token, message, hint string) {
	d.reportAt(d.position(tk), message, hint)
}

// reportNode reports a problem with a whole value, at its start.
func (d *decoder) reportNode(node ast.Node, message, hint string) {
	d.reportAt(d.nodePosition(node), message, hint)
}

func (d *decoder) reportAt(pos Position, message, hint string) {
	d.reported[pos] = true
	if d.problems.full() {
		d.problems.add(Problem{})
		return
	}
	source, caret := snippet(d.sourceLine(pos.Line), pos.Column)
	d.problems.add(Problem{Position: pos, Message: clip(message), Hint: clip(hint), Source: source, caret: caret})
}

// resolve follows anchors, aliases and tags to the node holding the value.
func (d *decoder) resolve(node ast.Node) ast.Node {
	for depth := 0; depth < 32; depth++ {
		switch n := node.(type) {
		case *ast.AnchorNode:
			if name := n.Name.GetToken().Value; name != "" {
				d.anchors[name] = n.Value
			}
			node = n.Value
		case *ast.AliasNode:
			name := n.Value.GetToken().Value
			target, ok := d.anchors[name]
			if onKey := d.keyAnchors[name]; !ok && onKey != nil {
				if d.reportedAt(d.position(n.GetToken())) {
					return nil
				}
				d.report(n.GetToken(), fmt.Sprintf("alias *%s names the anchor on the key %q (line %d), not a value", name,
					onKey.Value.GetToken().Value, d.position(onKey.GetToken()).Line), "move the anchor onto the value it should name")
				return nil
			}
			if !ok {
				// Met again when a check walks the value a second time.
				if pos := d.position(n.GetToken()); !d.reportedAt(pos) {
					hint := "define &name before using *name"
					if strings.ContainsAny(name, "*/?[{") || strings.HasPrefix(name, ".") {
						// *.md, **/x: a glob, not an anchor's name.
						hint = quoteGlobHint
					}
					d.reportAt(pos, fmt.Sprintf("alias *%s names no anchor defined above it", name), hint)
				}
				return nil
			}
			if d.recursive[n] {
				if pos := d.position(n.GetToken()); !d.reportedAt(pos) {
					d.reportAt(pos, fmt.Sprintf("alias *%s is inside the value of &%s: a value cannot contain itself", name, name),
						"write the inner value out, or anchor something else")
				}
				return nil
			}
			d.expand(n, target)
			node = target
		case *ast.TagNode:
			d.refuseTag(n)
			node = n.Value
		default:
			return node
		}
	}
	return node
}

func describe(node ast.Node) string {
	switch node.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "true or false"
	case *ast.NullNode, nil:
		return "nothing"
	}
	return "a " + node.Type().String()
}

func isNull(node ast.Node) bool {
	_, ok := node.(*ast.NullNode)
	return node == nil || ok
}

// decode fills v (a pointer's element) from node. path names the value for
// messages and positions; kind is the expression kind from the field's tag.
func (d *decoder) decode(node ast.Node, v reflect.Value, path string, kind triggers.Kind) {
	if node != nil {
		d.positions[path] = d.nodePosition(node)
	}
	node = d.resolve(node)
	if isNull(node) {
		return
	}
	switch {
	case v.Type() == reflect.TypeFor[Expr]():
		d.decodeExpr(node, v.Addr().Interface().(*Expr), path, kind)
		return
	case v.Type() == reflect.TypeFor[Triggers]():
		d.decodeTriggers(node, v.Addr().Interface().(*Triggers), path)
		return
	case v.Type() == reflect.TypeFor[Commands]():
		d.decodeCommands(node, v.Addr().Interface().(*Commands), path)
		return
	case v.Type() == reflect.TypeFor[Duration]():
		text, ok := d.scalar(node, path, "a duration such as 30m")
		if !ok {
			return
		}
		dur, err := ParseDuration(text)
		if err != nil {
			hint := "use a number and a unit: 90s, 30m, 2h, 1h30m or 7d"
			if strings.Contains(err.Error(), "too long") {
				hint = "write a shorter one, such as 30d"
			}
			d.reportNode(node, fmt.Sprintf("%s: %v", path, err), hint)
			return
		}
		v.SetInt(int64(dur))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		target := reflect.New(v.Type().Elem())
		d.decode(node, target.Elem(), path, kind)
		v.Set(target)
	case reflect.Struct:
		d.decodeStruct(node, v, path)
	case reflect.Slice:
		d.decodeSlice(node, v, path)
	case reflect.Map:
		d.decodeStringMap(node, v, path)
	case reflect.String:
		if isFlow(node) {
			// A prompt such as {"summary": ...} or [x] reads as a
			// mapping or a list.
			d.reportNode(node, fmt.Sprintf("%s must be a string, not %s", path, describe(node)),
				"a value that starts with [ or { is a list or a mapping in YAML; for text that starts so, quote it or write it as a block after |")
			return
		}
		if text, ok := d.scalar(node, path, "a string"); ok {
			v.SetString(text)
		}
	case reflect.Int:
		d.decodeInt(node, v, path)
	case reflect.Bool:
		b, ok := node.(*ast.BoolNode)
		if !ok {
			d.reportNode(node, fmt.Sprintf("%s must be true or false, not %s", path, describe(node)), "")
			return
		}
		v.SetBool(b.Value)
	default:
		panic(fmt.Sprintf("spec: no decoder for %s", v.Type()))
	}
}

// wholeNumber is an integer as YAML writes one; the parser gives one too
// large for 64 bits as a string.
var wholeNumber = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?(0x[0-9a-fA-F_]+|0o[0-7_]+|0b[01_]+|[0-9][0-9_]*)$`)
}}

// decodeInt reads a whole number, keeping the text as written for
// messages. One too large for an int is refused, except version's: any
// version but 1 is refused by check, with the number as written.
func (d *decoder) decodeInt(node ast.Node, v reflect.Value, path string) {
	d.numbers[path] = node.GetToken().Value
	var i int64
	tooLarge := false
	switch n := node.(type) {
	case *ast.IntegerNode:
		switch x := n.Value.(type) {
		case int64:
			i = x
		case uint64:
			i, tooLarge = int64(min(x, math.MaxInt64)), x > math.MaxInt64
		}
	case *ast.StringNode:
		if n.GetToken().Type != token.StringType || !wholeNumber.Get().MatchString(n.Value) {
			d.reportNode(node, fmt.Sprintf("%s must be a whole number, not %s", path, describe(node)), "")
			return
		}
		i, tooLarge = math.MaxInt64, true
		if strings.HasPrefix(n.Value, "-") {
			i = math.MinInt64
		}
	default:
		d.reportNode(node, fmt.Sprintf("%s must be a whole number, not %s", path, describe(node)), "")
		return
	}
	if tooLarge && path != "version" {
		d.reportNode(node, fmt.Sprintf("%s: %s is too large a number", path, d.numbers[path]),
			fmt.Sprintf("write a number between %d and %d", math.MinInt64, math.MaxInt64))
		return
	}
	v.SetInt(i)
}

// refuseTag reports a YAML tag (!include, !!binary, ...): nothing here
// gives one a meaning, and taking the value without it would read
// "!include other.yaml" as the text "other.yaml".
func (d *decoder) refuseTag(tag *ast.TagNode) {
	pos := d.position(tag.Start)
	if d.reportedAt(pos) {
		return // met again through an alias
	}
	name := tag.Start.Value
	hint := "remove the tag: a value's type comes from where it is written"
	if name == "!include" {
		hint = "pipeline includes no other file: write the value here"
	}
	d.reportAt(pos, fmt.Sprintf("YAML tags such as %s are not supported", name), hint)
}

// scalar returns the text of a scalar node; numbers and booleans are taken
// as written, so that name: 2024 or prompt: yes read as text.
func (d *decoder) scalar(node ast.Node, path, want string) (string, bool) {
	switch n := node.(type) {
	case *ast.StringNode:
		return n.Value, true
	case *ast.LiteralNode:
		return n.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	}
	d.reportNode(node, fmt.Sprintf("%s must be %s, not %s", path, want, describe(node)), "")
	return "", false
}

// isFlow reports whether node is a list or a mapping written inline, in
// [ ] or { }: often text that YAML did not read as text.
func isFlow(node ast.Node) bool {
	switch n := node.(type) {
	case *ast.SequenceNode:
		return n.IsFlowStyle
	case *ast.MappingNode:
		return n.IsFlowStyle
	}
	return false
}

type field struct {
	name  string
	index []int
	kind  triggers.Kind
	// template is a text/template, whose place is kept for its checks.
	template bool
	// globs is a list of globs (watch, writes), checked item by item.
	globs bool
	// oneOf, when set, are the words a string field may hold.
	oneOf []string
	// shell is a shell line (run:), refused as a number.
	shell bool
}

// fields lists the YAML keys of a struct type, flattening inline fields.
func fields(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "" || tag == "-" {
			continue
		}
		if tag == ",inline" {
			for _, inner := range fields(f.Type) {
				inner.index = append([]int{i}, inner.index...)
				out = append(out, inner)
			}
			continue
		}
		kind := triggers.Condition
		switch f.Tag.Get("kind") {
		case "duration":
			kind = triggers.Duration
		case "when":
			kind = triggers.When
		}
		var oneOf []string
		if words := f.Tag.Get("oneof"); words != "" {
			oneOf = strings.Split(words, ",")
		}
		out = append(out, field{name: tag, index: []int{i}, kind: kind,
			template: f.Tag.Get("kind") == "template", globs: f.Tag.Get("kind") == "globs", oneOf: oneOf,
			shell: f.Tag.Get("kind") == "shell"})
	}
	return out
}

func fieldNames(fs []field) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names
}

// mappingEntries returns the entries of a mapping node, or reports that the
// node is not a mapping. Duplicate keys are reported.
func (d *decoder) mappingEntries(node ast.Node, path string) ([]*ast.MappingValueNode, bool) {
	var entries []*ast.MappingValueNode
	switch n := node.(type) {
	case *ast.MappingNode:
		entries = n.Values
	case *ast.MappingValueNode:
		entries = []*ast.MappingValueNode{n}
	default:
		what := path
		if what == "" {
			what = "the file"
		}
		d.reportNode(node, fmt.Sprintf("%s must be a mapping (key: value lines), not %s", what, describe(node)), "")
		return nil, false
	}
	seen := map[string]int{}
	var unique []*ast.MappingValueNode
	for _, e := range entries {
		d.unwrapKey(e)
		key := keyText(e)
		if key == "<<" {
			d.report(e.Key.GetToken(), "merge keys (<<) are not supported", "write the keys out, or use an alias for a whole value")
			continue
		}
		if first, dup := seen[key]; dup {
			d.report(e.Key.GetToken(), fmt.Sprintf("key %q appears twice in %s (first on line %d)", key, orFile(path), first),
				"keep one of them")
			continue
		}
		seen[key] = d.position(e.Key.GetToken()).Line
		unique = append(unique, e)
	}
	return unique, true
}

// unwrapKey reports an anchor or a tag written on a key, and reads the key
// without it. "- &p name: a" anchors the key name, not the phase, which is
// seldom what was meant.
func (d *decoder) unwrapKey(e *ast.MappingValueNode) {
	for {
		switch k := e.Key.(type) {
		case *ast.AnchorNode:
			if pos := d.position(k.GetToken()); !d.reportedAt(pos) {
				name, key := k.Name.GetToken().Value, k.Value.GetToken().Value
				d.reportAt(pos, fmt.Sprintf("the anchor &%s is on the key %q, not on a value", name, key),
					fmt.Sprintf("to name the whole mapping, put &%s alone at the end of the line before %s:, or write the mapping as {%s: ...}", name, key, key))
			}
			d.keyAnchors[k.Name.GetToken().Value] = k
			inner, ok := k.Value.(ast.MapKeyNode)
			if !ok {
				return
			}
			e.Key = inner
		case *ast.TagNode:
			d.refuseTag(k)
			inner, ok := k.Value.(ast.MapKeyNode)
			if !ok {
				return
			}
			e.Key = inner
		default:
			return
		}
	}
}

func keyText(e *ast.MappingValueNode) string {
	if e.Key == nil {
		return ""
	}
	if s, ok := e.Key.(*ast.StringNode); ok {
		return s.Value
	}
	return e.Key.GetToken().Value
}

func orFile(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) decodeStruct(node ast.Node, v reflect.Value, path string) {
	entries, ok := d.mappingEntries(node, path)
	if !ok {
		return
	}
	fs := fields(v.Type())
	for _, e := range entries {
		key := keyText(e)
		var match *field
		for i := range fs {
			if fs[i].name == key {
				match = &fs[i]
				break
			}
		}
		if match == nil {
			d.unknownKey(e, key, path, fieldNames(fs), v.Type())
			continue
		}
		keyPosition := d.position(e.Key.GetToken())
		d.positions[join(path, key)+"#key"] = keyPosition
		if match.shell && d.notShellLine(d.resolve(e.Value), join(path, key)) {
			d.positions[join(path, key)] = d.nodePosition(e.Value)
			continue
		}
		d.decode(e.Value, v.FieldByIndex(match.index), join(path, key), match.kind)
		if text := v.FieldByIndex(match.index); match.template && text.String() != "" {
			d.templates[join(path, key)] = d.textPlace(d.resolve(e.Value), text.String())
		}
		if match.globs {
			d.checkGlobs(e.Value, v.FieldByIndex(match.index).Interface().([]string), join(path, key))
		}
		if word := v.FieldByIndex(match.index); match.oneOf != nil && word.String() != "" && !contains(match.oneOf, word.String()) {
			hint := "use one of " + strings.Join(match.oneOf, ", ")
			if near := triggers.Closest(word.String(), match.oneOf); near != "" {
				hint = fmt.Sprintf("did you mean %q? (one of %s)", near, strings.Join(match.oneOf, ", "))
			}
			d.reportAt(d.positions[join(path, key)], fmt.Sprintf("%s: %q is not one of %s", join(path, key), word.String(), strings.Join(match.oneOf, ", ")), hint)
		}
		if isNull(e.Value) {
			// An empty value has no place of its own; point at its key.
			d.positions[join(path, key)] = keyPosition
		}
	}
}

// unknownKey reports a key that the struct of type t, at path, does not
// have.
func (d *decoder) unknownKey(e *ast.MappingValueNode, key, path string, known []string, t reflect.Type) {
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	hint := "the keys allowed here are " + strings.Join(sorted, ", ")
	switch near := triggers.Closest(key, known); {
	case t == reflect.TypeFor[Overrides]() && slices.Contains(fieldNames(fields(reflect.TypeFor[Pipeline]())), key):
		// A key of the whole pipeline (watch, name, ...): one spec does
		// not change it for the others.
		hint = fmt.Sprintf("%s is set in phases.yaml only; a spec's pipeline block may set %s", key, strings.Join(sorted, ", "))
	case (t == reflect.TypeFor[Phase]() || t == reflect.TypeFor[Policy]()) && slices.Contains(fieldNames(fields(reflect.TypeFor[Pipeline]())), key):
		// compact_prompt, watch, ...: one value for all the phases.
		hint = fmt.Sprintf("%s is set once for the whole pipeline, at the top level of phases.yaml, not in %s", key, path)
	case near != "":
		hint = fmt.Sprintf("did you mean %q?", near)
	}
	where := "at the top level"
	if path != "" {
		where = "in " + path
	}
	d.report(e.Key.GetToken(), fmt.Sprintf("unknown key %q %s", key, where), hint)
}

func (d *decoder) decodeSlice(node ast.Node, v reflect.Value, path string) {
	seq, ok := node.(*ast.SequenceNode)
	if !ok {
		d.reportNode(node, fmt.Sprintf("%s must be a list, not %s", path, describe(node)),
			"write a list as [a, b] or as lines starting with -")
		return
	}
	items := d.listItems(seq, path)
	out := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, item := range items {
		d.decode(item, out.Index(i), fmt.Sprintf("%s[%d]", path, i), triggers.Condition)
	}
	v.Set(out)
}

func (d *decoder) decodeStringMap(node ast.Node, v reflect.Value, path string) {
	entries, ok := d.mappingEntries(node, path)
	if !ok {
		return
	}
	out := reflect.MakeMapWithSize(v.Type(), len(entries))
	for _, e := range entries {
		value := d.resolve(e.Value)
		text := ""
		if !isNull(value) {
			var ok bool
			if text, ok = d.scalar(value, join(path, keyText(e)), "a string"); !ok {
				continue
			}
		}
		out.SetMapIndex(reflect.ValueOf(keyText(e)), reflect.ValueOf(text))
	}
	v.Set(out)
}

// decodeCommands reads a hook: one shell line, or a list of them.
func (d *decoder) decodeCommands(node ast.Node, out *Commands, path string) {
	hint := "write a shell line, as run: takes, or a list of them"
	items := []ast.Node{node}
	if seq, ok := node.(*ast.SequenceNode); ok {
		items = d.listItems(seq, path)
	}
	for i, item := range items {
		where := path
		if len(items) > 1 || node != item {
			where = fmt.Sprintf("%s[%d]", path, i)
		}
		item = d.resolve(item)
		if d.notShellLine(item, where) {
			continue
		}
		if _, ok := item.(*ast.MappingNode); ok {
			d.reportNode(item, fmt.Sprintf("%s must be a shell line or a list of them, not %s", where, describe(item)), hint)
			continue
		}
		if _, ok := item.(*ast.SequenceNode); ok {
			d.reportNode(item, fmt.Sprintf("%s must be a shell line or a list of them, not %s", where, describe(item)), hint)
			continue
		}
		text, ok := d.scalar(item, where, "a shell line")
		if !ok {
			continue
		}
		if strings.TrimSpace(text) == "" {
			d.reportNode(item, fmt.Sprintf("%s is an empty command", where), hint)
			continue
		}
		d.shellProgram(text, d.nodePosition(item), where)
		*out = append(*out, text)
	}
}

// notShellLine reports a number, or true or false, where a shell line is
// expected (a hook, run:): YAML reads paused: 42 or paused: true as a
// number or a boolean, never the command the user may think enabled.
func (d *decoder) notShellLine(node ast.Node, path string) bool {
	switch node.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode, *ast.BoolNode:
	default:
		return false
	}
	text := node.GetToken().Value
	d.reportNode(node, fmt.Sprintf("%s must be a shell line, not %s (%s)", path, describe(node), text),
		fmt.Sprintf(`write the command to run, such as notify-send "pipeline paused"; if %s is the program itself, quote it: '%s'`, text, text))
	return true
}

func (d *decoder) decodeTriggers(node ast.Node, out *Triggers, path string) {
	entries, ok := d.mappingEntries(node, path)
	if !ok {
		return
	}
	for _, e := range entries {
		name := keyText(e)
		if !validName(name) {
			d.report(e.Key.GetToken(), fmt.Sprintf("trigger name %q in %s is not a plain name", name, path),
				"use letters, digits, -, _ and .; the name is the reason shown when it fires")
			continue
		}
		trigger := Trigger{Name: name}
		value := d.resolve(e.Value)
		d.positions[join(path, name)] = d.position(e.Key.GetToken())
		if !isNull(value) {
			trigger.Expr = &Expr{}
			d.decodeExpr(value, trigger.Expr, join(path, name), triggers.Condition)
		}
		*out = append(*out, trigger)
	}
}

// decodeExpr reads and compiles an expression, reporting a compile error at
// its line and column in the file.
func (d *decoder) decodeExpr(node ast.Node, out *Expr, path string, kind triggers.Kind) {
	switch node.(type) {
	case *ast.SequenceNode, *ast.MappingNode, *ast.MappingValueNode:
		hint := "write one condition, such as tokens > 15000; join several with && or ||"
		switch kind {
		case triggers.Duration:
			hint = `write one duration, such as 10s, or an expression such as duration("10s") * consecutive_errors`
		case triggers.When:
			hint = `write one condition, such as spec.priority != "low"; join several with && or ||`
		}
		d.reportNode(node, fmt.Sprintf("%s must be an expression, not %s", path, describe(node)), hint)
		return
	}
	source, ok := d.scalar(node, path, "an expression")
	if !ok {
		return
	}
	*out = d.textPlace(node, source)
	out.Kind = kind
	compiled, err := triggers.Compile(source, kind)
	if err != nil {
		var ce *triggers.CompileError
		if errors.As(err, &ce) {
			offset := runeOffset(source, ce.Line, ce.Column)
			d.reportAt(d.exprPosition(*out, offset), fmt.Sprintf("%s: %s", path, ce.Message), ce.Hint)
		} else {
			d.reportAt(out.At, fmt.Sprintf("%s: %v", path, err), "")
		}
		return
	}
	compiled.Locate = d.locator(*out)
	out.program = compiledProgram(compiled)
}

// textPlace is where the text of a scalar node starts in the file and how
// it is quoted, so that exprPositions can map offsets of source to the
// file.
func (d *decoder) textPlace(node ast.Node, source string) Expr {
	start := d.position(node.GetToken())
	var quote rune
	switch tk := node.GetToken(); {
	case tk.Type == token.DoubleQuoteType:
		quote, start.Column = '"', start.Column+1
	case tk.Type == token.SingleQuoteType:
		quote, start.Column = '\'', start.Column+1
	}
	if lit, isLiteral := node.(*ast.LiteralNode); isLiteral {
		start = Position{File: d.file, Line: d.position(lit.Start).Line + 1, Column: 1}
	}
	return Expr{Source: source, At: d.skipSpace(start), quote: quote}
}

// locator maps offsets of e to its file, for the run-time errors of e. It
// walks a decoder of its own at each call: the expression may fail on any
// goroutine, and the walk caches lines as it goes.
func (d *decoder) locator(e Expr) func(offset int) string {
	file, lines := d.file, d.lines
	return func(offset int) string {
		walker := &decoder{file: file, lines: lines}
		return walker.exprPosition(e, offset).String()
	}
}

// runeOffset converts expr's 1-based line and 0-based column into a rune
// offset within source.
func runeOffset(source string, line, column int) int {
	offset := 0
	for i, l := range strings.Split(source, "\n") {
		if i == line-1 {
			return offset + column
		}
		offset += utf8.RuneCountInString(l) + 1
	}
	return offset
}

// skipSpace moves pos forward to the first non-space character.
func (d *decoder) skipSpace(pos Position) Position {
	for {
		r, ok := d.runeAt(pos)
		if !ok || !unicode.IsSpace(r) {
			return pos
		}
		pos = d.next(pos)
	}
}

// runeAt returns the character at pos; past the end of a line it is '\n'.
func (d *decoder) runeAt(pos Position) (rune, bool) {
	if pos.Line < 1 || pos.Line > len(d.lines) {
		return 0, false
	}
	line := d.runeLine(pos.Line)
	if pos.Column-1 < len(line) {
		return line[pos.Column-1], true
	}
	return '\n', true
}

func (d *decoder) next(pos Position) Position {
	if pos.Column-1 >= len(d.runeLine(pos.Line)) {
		return Position{File: pos.File, Line: pos.Line + 1, Column: 1}
	}
	pos.Column++
	return pos
}

// runeLine is a line of the file as characters, kept for the walks of
// exprPositions: converting a long line at each step made them quadratic.
func (d *decoder) runeLine(line int) []rune {
	if line < 1 || line > len(d.lines) {
		return nil
	}
	if d.runeLines == nil {
		d.runeLines = map[int][]rune{}
	}
	runes, ok := d.runeLines[line]
	if !ok {
		runes = []rune(d.sourceLine(line))
		d.runeLines[line] = runes
	}
	return runes
}

// exprPosition maps a rune offset in an expression to the file.
func (d *decoder) exprPosition(e Expr, offset int) Position {
	return d.exprPositions(e, []int{offset})[0]
}

// exprPositions maps rune offsets in an expression to the file, in one
// walk of the expression and one of the file whatever their number. YAML
// strips indentation and folds line breaks in block and multi-line scalars
// but keeps every other character, so the walk counts only non-space
// characters on both sides; in a quoted scalar an escape (\" or ”) is
// two characters in the file for one in the expression. An offset past the
// end maps to just after the last character.
func (d *decoder) exprPositions(e Expr, offsets []int) []Position {
	src := []rune(e.Source)
	// before[i] counts the non-space characters of src before offset i.
	before := make([]int, len(src)+1)
	for i, r := range src {
		before[i+1] = before[i]
		if !unicode.IsSpace(r) {
			before[i+1]++
		}
	}
	type target struct {
		index, nonSpace int
		pastEnd         bool
	}
	targets := make([]target, len(offsets))
	for i, offset := range offsets {
		t := target{index: i, pastEnd: offset >= len(src)}
		if t.pastEnd {
			// The last character; the caret goes one past it.
			offset = len(src)
			for offset > 0 && unicode.IsSpace(src[offset-1]) {
				offset--
			}
			offset--
		}
		t.nonSpace = before[min(max(offset, 0), len(src))]
		targets[i] = t
	}
	slices.SortFunc(targets, func(a, b target) int { return a.nonSpace - b.nonSpace })
	out := make([]Position, len(offsets))
	pos, passed := e.At, 0
	for k := 0; k < len(targets); {
		r, ok := d.runeAt(pos)
		if !ok {
			for ; k < len(targets); k++ {
				out[targets[k].index] = pos
			}
			break
		}
		if !unicode.IsSpace(r) {
			for ; k < len(targets) && targets[k].nonSpace == passed; k++ {
				at := pos
				if targets[k].pastEnd {
					at.Column++
				}
				out[targets[k].index] = at
			}
			passed++
			if next, _ := d.runeAt(d.next(pos)); (e.quote == '"' && r == '\\') || (e.quote == '\'' && r == '\'' && next == '\'') {
				pos = d.next(pos) // the escaped character counts with its escape
			}
		}
		pos = d.next(pos)
	}
	return out
}

// validName reports whether name is usable as a phase, step or trigger
// name: it appears in paths, logs and expressions.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		ok := r == '_' || r == '-' || r == '.' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !ok || (i == 0 && (r == '-' || r == '.')) {
			return false
		}
	}
	return true
}
