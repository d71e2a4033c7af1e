package spec

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/pipeline-dev/pipeline/triggers"
)

// ResumeInput is what a resume_context template reads: the data the resume
// context is rendered from. It is part of phases.yaml's contract, as Env
// is for expressions, so it lives with the model: the loader checks a
// template against it, and the engine (which cannot be imported here)
// renders with it.
type ResumeInput struct {
	Pipeline string
	Phase    string     // the phase being resumed
	Step     string     // the step being resumed
	Attempt  int        // the attempt of the phase, from 1
	Reason   string     // why it paused / restarted, as status names it: "checkpoint", "phase-complete", "runner-died", "restart: context"
	Why      string     // the same said in a sentence for the agent, with a resume --phase jump
	Note     string     // checkpoint note or pause note
	Done     []DoneItem // phases completed so far, and the work of the current phase so far
	// Skipped are the earlier phases a false when: skipped.
	Skipped      []SkippedPhase
	FilesChanged []string // from git, may be long
	// HumanChanges are the files the work tree changed in while the
	// session was paused (since its pause checkpoint): a human's edits.
	HumanChanges []string
	NextSteps    []string // the remaining steps of this phase and the remaining phases, in order
	HumanNotes   []string // notes left with pause/resume, oldest first
	SpecPath     string
	SpecDiff     string // unified diff of the spec since the pause, "" when unchanged
	// SpecFrontmatter is the spec's frontmatter (YAML) when it changed
	// since the pause: its values apply from the step resumed.
	SpecFrontmatter string
	// The working set (pipeline memory): the facts pinned (the project's,
	// then the session's), the decisions made (oldest first) and the
	// tasks still open (oldest first).
	PinnedFacts []string
	Decisions   []string
	OpenTasks   []string
	// RecentOutput is the end of the last step's output, given to the
	// fresh session a compaction starts: the tail of the conversation it
	// replaces.
	RecentOutput string
	// Failed is what failed in the attempt before this one (a retry, a
	// phase run again because its done_when was false, a resume after
	// needs-human or a failure): each step, how it ended and its last
	// lines.
	Failed []StepFailure
}

// StepFailure is how a step failed: its exit code (or its time-out), the
// error the agent reported, and the last lines of its output (redacted
// as all output is).
type StepFailure struct {
	Step     string `json:"step"`
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Error    string `json:"error,omitempty"`
	Output   string `json:"output,omitempty"`
}

// DoneItem is one finished piece of work: a completed phase, or the work
// of the current phase so far.
type DoneItem struct {
	Phase, Summary string
	// Passed: the phase completed; otherwise this is the current phase's
	// work so far.
	Passed   bool
	Attempts int
	// ExitCodes are the phase's exit codes in the order its steps ended,
	// every step and attempt together (the latest 32); Steps has the last
	// result of each step of the current phase, by name.
	ExitCodes []int
	Steps     []StepExit
}

// SkippedPhase is a phase its when: skipped: the expression, and the
// values it read as name=value.
type SkippedPhase struct {
	Phase, When, Read string
}

// StepExit is how a step of the current phase last ended.
type StepExit struct {
	Name     string
	ExitCode int
	TimedOut bool
}

// ResumeTemplateFuncs are the functions a resume_context template may call
// besides text/template's built-ins (see engine.DefaultResumeTemplate), a
// map of the caller's own. The engine renders with these, diffblock
// replaced by one that knows when the budget cut the diff to a note.
func ResumeTemplateFuncs() template.FuncMap {
	return template.FuncMap{
		"oneline": func(s string) string { return strings.Join(strings.Fields(s), " ") },
		"indent": func(n int, s string) string {
			s = strings.TrimRight(s, " \t\r\n")
			return strings.ReplaceAll(s, "\n", "\n"+strings.Repeat(" ", max(n, 0)))
		},
		"join": func(sep string, list []string) string { return strings.Join(list, sep) },
		"ints": func(sep string, list []int) string {
			s := make([]string, len(list))
			for i, n := range list {
				s[i] = strconv.Itoa(n)
			}
			return strings.Join(s, sep)
		},
		"fence":     Fence,
		"diffblock": func(s string) string { return Fence("diff", s) },
	}
}

// Fence puts s in a markdown code block whose fence is longer than any run
// of backticks in s (a spec is markdown and has its own fences).
func Fence(lang, s string) string {
	run, longest := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + fence
}

// TemplateProblem is a mistake in a resume_context template, at a byte
// offset of the template's text.
type TemplateProblem struct {
	Offset  int
	Message string
	Hint    string
}

// CheckResumeTemplate parses a resume_context template with the functions
// it may call and follows every field it reads (.Phase, .Done, $.SpecPath,
// .Phase inside a range over .Done, ...) through ResumeInput's types. A
// field that does not exist would fail at each rendering, and the resume
// context would be lost; it is a load error instead. What cannot be known
// before rendering (the result of index, or of a template called by name)
// is not followed.
func CheckResumeTemplate(text string) []TemplateProblem {
	funcs := ResumeTemplateFuncs()
	t, err := template.New("resume_context").Funcs(funcs).Parse(text)
	if err != nil {
		return []TemplateProblem{parseProblem(text, err)}
	}
	c := &templateChecker{funcs: map[string]reflect.Type{}}
	for name, f := range funcs {
		c.funcs[name] = reflect.TypeOf(f)
	}
	for _, tree := range t.Templates() {
		if tree.Tree == nil || tree.Tree.Root == nil {
			continue
		}
		var dot reflect.Type // a template called by name: its data is not known
		if tree.Name() == "resume_context" {
			dot = reflect.TypeOf(ResumeInput{})
		}
		c.list(tree.Tree.Root, dot, map[string]reflect.Type{"$": dot})
	}
	sort.SliceStable(c.problems, func(i, j int) bool { return c.problems[i].Offset < c.problems[j].Offset })
	return c.problems
}

// parseProblem turns text/template's "template: resume_context:3: ..."
// into a problem at the start of that line of the template.
func parseProblem(text string, err error) TemplateProblem {
	message := err.Error()
	rest, ok := strings.CutPrefix(message, "template: resume_context:")
	if !ok {
		return TemplateProblem{Message: message}
	}
	lineText, detail, ok := strings.Cut(rest, ": ")
	line, convErr := strconv.Atoi(lineText)
	if !ok || convErr != nil {
		return TemplateProblem{Message: rest}
	}
	offset := 0
	for i := 1; i < line; i++ {
		next := strings.IndexByte(text[offset:], '\n')
		if next < 0 {
			break
		}
		offset += next + 1
	}
	problem := TemplateProblem{Offset: offset, Message: detail}
	if strings.HasPrefix(detail, "function ") && strings.HasSuffix(detail, " not defined") {
		problem.Hint = "a template can call oneline, indent, join, ints, fence, diffblock and text/template's own functions"
	}
	return problem
}

type templateChecker struct {
	funcs    map[string]reflect.Type
	problems []TemplateProblem
}

func (c *templateChecker) report(node parse.Node, message, hint string) {
	c.problems = append(c.problems, TemplateProblem{Offset: int(node.Position()), Message: message, Hint: hint})
}

// list checks the nodes of a list with dot of type dot (nil: unknown).
// Variables declared in it are seen by what follows, not outside.
func (c *templateChecker) list(l *parse.ListNode, dot reflect.Type, vars map[string]reflect.Type) {
	if l == nil {
		return
	}
	scope := make(map[string]reflect.Type, len(vars))
	for k, v := range vars {
		scope[k] = v
	}
	for _, node := range l.Nodes {
		switch n := node.(type) {
		case *parse.ActionNode:
			c.pipe(n.Pipe, dot, scope)
		case *parse.IfNode:
			c.pipe(n.Pipe, dot, scope)
			c.list(n.List, dot, scope)
			c.list(n.ElseList, dot, scope)
		case *parse.WithNode:
			t := c.pipe(n.Pipe, dot, scope)
			c.list(n.List, t, scope)
			c.list(n.ElseList, dot, scope)
		case *parse.RangeNode:
			inner := make(map[string]reflect.Type, len(scope))
			for k, v := range scope {
				inner[k] = v
			}
			key, elem := rangeTypes(c.pipe(n.Pipe, dot, inner))
			switch decl := n.Pipe.Decl; len(decl) {
			case 1:
				inner[decl[0].Ident[0]] = elem
			case 2:
				inner[decl[0].Ident[0]], inner[decl[1].Ident[0]] = key, elem
			}
			c.list(n.List, elem, inner)
			c.list(n.ElseList, dot, scope)
		case *parse.TemplateNode:
			if n.Pipe != nil {
				c.pipe(n.Pipe, dot, scope)
			}
		}
	}
}

// rangeTypes is what range over a value of type t gives: key and element.
func rangeTypes(t reflect.Type) (key, elem reflect.Type) {
	if t == nil {
		return nil, nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return reflect.TypeOf(0), t.Elem()
	case reflect.Map:
		return t.Key(), t.Elem()
	case reflect.Int:
		return t, t
	}
	return nil, nil
}

// pipe checks a pipeline and returns the type it gives (nil: unknown).
func (c *templateChecker) pipe(p *parse.PipeNode, dot reflect.Type, vars map[string]reflect.Type) reflect.Type {
	if p == nil {
		return nil
	}
	var t reflect.Type
	for i, cmd := range p.Cmds {
		t = c.command(cmd, dot, vars, i > 0)
	}
	if !p.IsAssign {
		for _, v := range p.Decl {
			vars[v.Ident[0]] = t
		}
	}
	return t
}

// builtinResult is the result type of a text/template function that has
// one whatever its arguments, nil for the others.
func builtinResult(name string) reflect.Type {
	switch name {
	case "not", "eq", "ne", "lt", "le", "gt", "ge":
		return reflect.TypeFor[bool]()
	case "len":
		return reflect.TypeFor[int]()
	case "print", "printf", "println", "html", "js", "urlquery":
		return reflect.TypeFor[string]()
	}
	return nil
}

func (c *templateChecker) command(cmd *parse.CommandNode, dot reflect.Type, vars map[string]reflect.Type, piped bool) reflect.Type {
	if len(cmd.Args) == 0 {
		return nil
	}
	for _, arg := range cmd.Args[1:] {
		c.operand(arg, dot, vars)
	}
	if id, ok := cmd.Args[0].(*parse.IdentifierNode); ok {
		f, ok := c.funcs[id.Ident]
		if !ok {
			return builtinResult(id.Ident)
		}
		// A pipeline's value comes last, after the written arguments.
		if given := len(cmd.Args) - 1 + map[bool]int{true: 1}[piped]; given != f.NumIn() && !f.IsVariadic() {
			c.report(id, fmt.Sprintf("%s takes %d argument%s, not %d", id.Ident, f.NumIn(), map[bool]string{true: "", false: "s"}[f.NumIn() == 1], given),
				"a piped value counts as the last argument: {{.Note | oneline}} is {{oneline .Note}}")
		}
		return f.Out(0)
	}
	return c.operand(cmd.Args[0], dot, vars)
}

// operand checks one operand and returns its type (nil: unknown).
func (c *templateChecker) operand(node parse.Node, dot reflect.Type, vars map[string]reflect.Type) reflect.Type {
	switch n := node.(type) {
	case *parse.DotNode:
		return dot
	case *parse.FieldNode:
		return c.fields(n, dot, n.Ident)
	case *parse.VariableNode:
		return c.fields(n, vars[n.Ident[0]], n.Ident[1:])
	case *parse.ChainNode:
		return c.fields(n, c.operand(n.Node, dot, vars), n.Field)
	case *parse.PipeNode:
		return c.pipe(n, dot, vars)
	case *parse.StringNode:
		return reflect.TypeOf("")
	case *parse.BoolNode:
		return reflect.TypeOf(false)
	case *parse.NumberNode:
		if n.IsInt {
			return reflect.TypeOf(0)
		}
	case *parse.IdentifierNode:
		if f, ok := c.funcs[n.Ident]; ok && f.NumOut() > 0 {
			return f.Out(0)
		}
		return builtinResult(n.Ident)
	}
	return nil
}

// fields follows names from a value of type t, reporting the first that t
// does not have.
func (c *templateChecker) fields(node parse.Node, t reflect.Type, names []string) reflect.Type {
	for _, name := range names {
		if t == nil {
			return nil
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := t.FieldByName(name)
			if !ok || !f.IsExported() {
				var known []string
				for i := 0; i < t.NumField(); i++ {
					known = append(known, t.Field(i).Name)
				}
				hint := "a " + t.Name() + " has " + strings.Join(known, ", ")
				if near := triggers.Closest(name, known); near != "" {
					hint = fmt.Sprintf("did you mean .%s? (%s)", near, hint)
				}
				c.report(node, fmt.Sprintf("%s has no field %s", what(t), name), hint)
				return nil
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem()
		case reflect.Interface:
			return nil
		default:
			c.report(node, fmt.Sprintf("%s has no fields: .%s cannot be read from it", what(t), name), "")
			return nil
		}
	}
	return t
}

// what names a type of the template's data for messages.
func what(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		return "a " + t.Name()
	case reflect.Slice:
		return "a list"
	case reflect.String:
		return "a text"
	case reflect.Int:
		return "a number"
	}
	return "a " + t.String()
}

// placeTemplateProblems reports the problems of a template written at
// place in the file (see Problem), each at its character.
func (d *decoder) placeTemplateProblems(place Expr, path string, problems []TemplateProblem) {
	if len(problems) == 0 {
		return
	}
	offsets := make([]int, len(problems))
	for i, p := range problems {
		offsets[i] = utf8.RuneCountInString(place.Source[:min(max(p.Offset, 0), len(place.Source))])
	}
	for i, pos := range d.exprPositions(place, offsets) {
		hint := problems[i].Hint
		if hint == "" {
			hint = "it is a Go text/template over the resume context's data; see README for the fields it can use"
		}
		d.reportAt(pos, fmt.Sprintf("%s: %s", path, problems[i].Message), hint)
	}
}
