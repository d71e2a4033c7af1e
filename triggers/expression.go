package triggers

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/pipeline-dev/pipeline/internal/lazy"
)

// Kind is what an expression must produce.
type Kind int

const (
	// Condition expressions (pause_when, restart_when, retry.when,
	// escalate_when, done_when) produce a bool.
	Condition Kind = iota
	// Duration expressions (retry.backoff) produce a duration.
	Duration
	// When is a phase's when:, a condition read as the phase is reached,
	// before it runs: it reads only WhenVariables.
	When
)

func (k Kind) String() string {
	if k == Duration {
		return "a duration"
	}
	return "true or false"
}

// Expression is a compiled expression, ready to evaluate many times.
type Expression struct {
	Source string
	Kind   Kind
	// Reads lists the top-level variables the expression reads, sorted, so a
	// caller can skip evaluation when none of them changed.
	Reads []string
	// StepRefs are the names used as steps.<name>, with their offsets in
	// Source, so a loader can check that each names a real step.
	StepRefs []StepRef
	// PhaseRefs are the names used as phases.<name> (in a when:), with
	// their offsets, so a loader can check that each names an earlier
	// phase.
	PhaseRefs []StepRef
	// SpecRefs are the keys read as spec.<key>, for the record of what a
	// when: read.
	SpecRefs []StepRef
	// Locate, when the loader sets it, says where in its file the
	// character at a rune offset of Source was written (file:line:col),
	// so that a run-time error points into the file, not into the
	// expression. It may be called from any goroutine.
	Locate  func(offset int) string
	program *vm.Program
	// literal is a duration written bare (10s): the program is
	// duration("10s"), whose offsets are not Source's.
	literal bool
	// flag is, for a condition that is one boolean variable (checkpoint,
	// timed_out), 1 + the index of its field in Env, read without the
	// machine (whose read of a field allocates); 0 otherwise.
	flag int
}

// EvalError is an expression that failed at run time: it is an error, never
// a false.
type EvalError struct {
	Source string
	// Offset is where in Source the failing part starts, in runes; Place
	// is where that was written in its file, "" when not known.
	Offset  int
	Place   string
	Message string
}

func (e *EvalError) Error() string {
	if e.Place != "" {
		return fmt.Sprintf("%s: %s: %s", e.Place, shortened(e.Source), e.Message)
	}
	return fmt.Sprintf("expression %q: %s", shortened(e.Source), e.Message)
}

// shortened is an expression on one line and at most 100 characters, to
// name it in a note.
func shortened(source string) string {
	runes := []rune(strings.Join(strings.Fields(source), " "))
	if len(runes) > 100 {
		return string(runes[:99]) + "…"
	}
	return string(runes)
}

// evalError makes err, from running the program, an *EvalError placed at
// the failing part when expr says which it is, at the start otherwise.
func (e *Expression) evalError(err error) *EvalError {
	out := &EvalError{Source: e.Source, Message: err.Error()}
	var fe *file.Error
	if errors.As(err, &fe) {
		out.Message = fe.Message
		if !e.literal {
			out.Offset = fe.From
		}
	}
	if e.Locate != nil {
		out.Place = e.Locate(out.Offset)
	}
	return out
}

// StepRef is one steps.<name> in an expression.
type StepRef struct {
	Name   string
	Offset int // in runes, from the start of Source
}

// CompileError is an expression that does not compile. Line is 1-based and
// Column 0-based, in runes, both relative to the expression's source.
type CompileError struct {
	Line    int
	Column  int
	Message string
	Hint    string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("%d:%d: %s", e.Line, e.Column+1, e.Message)
}

// Compile checks source against Env and returns the program to run. A
// Duration expression may also be a bare duration literal such as 10s.
func Compile(source string, kind Kind) (*Expression, error) {
	if e := flagCondition(source, kind); e != nil {
		return e, nil
	}
	return compileWithExpr(source, kind)
}

// flagCondition is the condition that reads one boolean variable alone,
// written bare (the built-in pause_when "checkpoint"), as
// compileWithExpr makes it, or nil for any other expression. It is
// evaluated without the machine (see Expression.flag), so it needs no
// program: made here, it spares a run that watches a step expr's parser,
// checker and compiler (1.7 % of the CPU of pipeline run of one true step,
// perf) and the pages of code and tables they touch.
func flagCondition(source string, kind Kind) *Expression {
	if kind != Condition {
		return nil
	}
	var flag int
	switch source {
	case "timed_out":
		flag = timedOutField
	case "checkpoint":
		flag = checkpointField
	default:
		return nil
	}
	return &Expression{Source: source, Kind: kind, Reads: []string{source}, flag: flag}
}

// timedOutField and checkpointField are boolField of Env's boolean
// fields, known without reflection (whose look at Env's tags touches
// pages a run reads for nothing else); TestBoolFieldsAreEnvs holds them
// to Env.
const (
	timedOutField   = 9
	checkpointField = 10
)

// compileWithExpr is Compile through expr.
func compileWithExpr(source string, kind Kind) (*Expression, error) {
	if strings.TrimSpace(source) == "" {
		return nil, &CompileError{Line: 1, Message: "the expression is empty", Hint: hintFor(kind)}
	}
	text := source
	if kind == Duration {
		_, err := ParseDuration(source)
		switch {
		case err == nil:
			text = fmt.Sprintf("duration(%q)", strings.TrimSpace(source))
		case durationLiteral.Get().MatchString(strings.TrimSpace(source)):
			// Written as a duration but not one (-10s, 30x, 999999999d):
			// say why, rather than what expr makes of "-10s".
			return nil, &CompileError{Line: 1, Message: err.Error(), Hint: hintFor(kind)}
		}
	}
	if at := tooDeep(text); at >= 0 && text == source {
		line, column := lineColumn(source, at)
		return nil, &CompileError{Line: line, Column: column, Message: fmt.Sprintf("the expression nests more than %d levels deep here", maxNesting),
			Hint: "split it into several triggers, or use fewer brackets and prefix operators"}
	}
	options := slices.Clone(compileOptions.Get())
	if kind != Duration {
		options = append(options, expr.AsBool())
	}
	program, err := expr.Compile(text, options...)
	if err != nil {
		return nil, compileError(err, text, kind)
	}
	if kind == Duration {
		if t := program.Node().Type(); t != reflect.TypeFor[time.Duration]() {
			return nil, &CompileError{Line: 1, Message: fmt.Sprintf("the expression gives %s, not a duration", typeName(t)),
				Hint: hintFor(kind)}
		}
	}
	e := &Expression{Source: source, Kind: kind, program: program, literal: text != source, flag: boolField(program.Node())}
	if text == source {
		v := inspect(program.Node())
		e.Reads, e.StepRefs, e.PhaseRefs, e.SpecRefs = v.reads, v.refs, v.phaseRefs, v.specRefs
		refused := v.refused
		if refused == nil {
			refused = v.outOfScope(kind)
		}
		if refused == nil {
			refused = constantFailure(program.Node())
		}
		if refused == nil && kind == Duration {
			refused = negativeConstant(program.Node())
		}
		if refused != nil {
			line, column := lineColumn(source, refused.at.Location().From)
			return nil, &CompileError{Line: line, Column: column, Message: refused.message, Hint: refused.hint}
		}
	}
	return e, nil
}

// boolField is 1 + the index in Env of the boolean field that node reads
// when the expression is that variable alone, or 0.
func boolField(node ast.Node) int {
	ident, ok := node.(*ast.IdentifierNode)
	if !ok {
		return 0
	}
	return boolFieldNamed(ident.Value)
}

// boolFieldNamed is 1 + the index in Env of the boolean field name, or 0.
func boolFieldNamed(name string) int {
	env := reflect.TypeFor[Env]()
	for i := range env.NumField() {
		if f := env.Field(i); f.Tag.Get("expr") == name && f.Type.Kind() == reflect.Bool {
			return i + 1
		}
	}
	return 0
}

// durationLiteral is what reads as a duration written bare, well formed
// or not: numbers each followed by a unit, each maybe signed.
var durationLiteral = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^([-+]?([0-9]+\.?[0-9]*|\.[0-9]+)[a-zµμ]+)+$`) }}

// durationFunction replaces expr's duration() so that expressions read
// durations as phases.yaml does, days included.
func durationFunction() expr.Option {
	return expr.Function("duration", func(params ...any) (any, error) {
		return ParseDuration(params[0].(string))
	}, new(func(string) time.Duration))
}

// nonDeterministic lists the expr built-ins an expression may not call, and
// why. A session is replayed from its events (and Decide may run as a
// Temporal workflow), so an expression must give the same answer from the
// same variables on any machine at any time: no wall clock, no time zone
// of the machine, no Go map order, which is random.
var nonDeterministic = []struct {
	name string
	refusal
}{
	{"now", refusal{message: "now() reads the wall clock: a replayed session would decide differently, and a running step would not check it again as the clock moves",
		hint: `measure time with elapsed, phase_elapsed or session_elapsed, e.g. elapsed > duration("30m")`}},
	{"timezone", refusal{message: "timezone() reads the time zones of the machine, which differ between machines",
		hint: `dates are read in UTC; write the offset in the date, e.g. date("2026-01-02T15:04:05+01:00")`}},
	{"keys", refusal{message: "keys() gives the keys in a random order",
		hint: `test a key with "status" in spec, count them with len(spec)`}},
	{"values", refusal{message: "values() gives the values in a random order",
		hint: `read a value by its key: spec.<key> or spec["<key>"]`}},
	{"toPairs", refusal{message: "toPairs() gives the pairs in a random order",
		hint: `read a value by its key (spec.<key>), count them with len(spec)`}},
}

// refusalOf is why an expression may not call the built-in name, if it
// may not.
func refusalOf(name string) (refusal, bool) {
	for _, n := range nonDeterministic {
		if n.name == name {
			return n.refusal, true
		}
	}
	return refusal{}, false
}

// disabledBuiltins removes the non-deterministic built-ins, so that a call
// to one is a compile error at its place.
func disabledBuiltins() []expr.Option {
	var options []expr.Option
	for _, n := range nonDeterministic {
		options = append(options, expr.DisableBuiltin(n.name))
	}
	return options
}

// compileOptions are the options every expression compiles with: built on
// first use, not at every command's start (expr.Function reflects on its
// types). Callers append to a copy.
var compileOptions = lazy.Value[[]expr.Option]{New: func() []expr.Option {
	return append([]expr.Option{expr.Env(Env{}), durationFunction(), dateFunction()}, disabledBuiltins()...)
}}

// dateLayouts are the layouts date() tries, expr's own.
var dateLayouts = []string{"2006-01-02", "15:04:05", "2006-01-02 15:04:05", time.RFC3339, time.RFC822, time.RFC850, time.RFC1123}

// dateFunction replaces expr's date(), which reads a zone abbreviation such
// as CET with the machine's time zone (the same text is another instant on
// a machine in Paris) and loads a named zone from the machine's zone
// database. Ours reads every date in UTC unless it carries a numeric
// offset, and takes no zone name.
func dateFunction() expr.Option {
	return expr.Function("date", func(params ...any) (any, error) {
		text, ok := params[0].(string)
		if !ok {
			return nil, fmt.Errorf("date() takes text, not %T", params[0])
		}
		if len(params) == 2 {
			layout, ok := params[1].(string)
			if !ok {
				return nil, fmt.Errorf("date(): the layout must be text, not %T", params[1])
			}
			return time.ParseInLocation(layout, text, time.UTC)
		}
		for _, layout := range dateLayouts {
			if t, err := time.ParseInLocation(layout, text, time.UTC); err == nil {
				return t, nil
			}
		}
		return nil, fmt.Errorf("%q is not a date: write 2006-01-02, 2006-01-02 15:04:05 or 2006-01-02T15:04:05Z07:00", text)
	}, new(func(string) time.Time), new(func(string, string) time.Time))
}

// lineColumn turns a rune offset in source into expr's 1-based line and
// 0-based column.
func lineColumn(source string, offset int) (line, column int) {
	line = 1
	for i, r := range []rune(source) {
		if i == offset {
			break
		}
		column++
		if r == '\n' {
			line, column = line+1, 0
		}
	}
	return line, column
}

func hintFor(kind Kind) string {
	if kind == Duration {
		return `write a duration such as 10s, or an expression such as duration("10s") * consecutive_errors`
	}
	if kind == When {
		return `write a condition such as spec.priority != "low" or phases.design.files_changed > 0`
	}
	return "write a condition such as tokens > 15000 or exit_code != 0"
}

func typeName(t reflect.Type) string {
	if t == nil {
		return "a value of unknown type"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Float64:
		return "a number"
	case reflect.Interface:
		return "a value of unknown type"
	}
	return t.String()
}

var (
	unknownName = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^unknown name (\S+)`) }}
	// unexpectedToken is expr's "unexpected token Bracket(")")": the
	// token's kind is expr's jargon, its text is what the reader wrote.
	unexpectedToken = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^unexpected token \w+\(("(?:[^"\\]|\\.)*")\)$`) }}
	stepField       = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^type triggers\.StepVars has no field (\S+)`) }}
	stepFieldNames  = []string{"exit_code", "timed_out", "tokens", "cost_usd", "elapsed", "output", "ran"}
	phaseField      = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^type triggers\.PhaseVars has no field (\S+)`) }}
)

func compileError(err error, source string, kind Kind) error {
	var fe *file.Error
	if !errors.As(err, &fe) {
		message := err.Error()
		if rest, ok := strings.CutPrefix(message, "expected bool, but got "); ok {
			message = fmt.Sprintf("a condition must give true or false, but this gives %s", articled(rest))
		}
		return &CompileError{Line: 1, Message: message, Hint: hintFor(kind)}
	}
	ce := &CompileError{Line: fe.Line, Column: fe.Column, Message: fe.Message}
	if ce.Line == 0 {
		ce.Line = 1
	}
	if strings.Contains(fe.Message, "unexpected token EOF") {
		// expr points at the last character; the missing part goes after it.
		lines := strings.Split(strings.TrimRight(source, " \t\n"), "\n")
		ce.Line, ce.Column = len(lines), utf8.RuneCountInString(lines[len(lines)-1])
		ce.Message = "the expression ends too early"
		ce.Hint = "complete it: an operator needs a value on each side, and every ( [ { and quote needs its closing one"
	} else if strings.HasPrefix(fe.Message, "unexpected token") {
		ce.Hint = "check the syntax: and, or, not, ==, !=, <, >, in, matches; text in quotes; durations as duration(\"30m\")"
		if m := unexpectedToken.Get().FindStringSubmatch(fe.Message); m != nil {
			if text, err := strconv.Unquote(m[1]); err == nil {
				ce.Message = fmt.Sprintf("unexpected %q", text)
				if text == "=" {
					ce.Hint = "compare with ==; a single = is not an operator"
				}
			}
		}
	} else if fe.Message == "literal not terminated" {
		// expr points past the end; the quote that opens the text is
		// where the reader has to look, as YAML does for its own quotes.
		if open := unclosedQuote(source); open >= 0 {
			ce.Line, ce.Column = lineColumn(source, open)
		}
		ce.Message = "the text opened here is never closed"
		ce.Hint = "close it with the same quote it starts with"
	}
	switch {
	case unknownName.Get().MatchString(fe.Message):
		name := unknownName.Get().FindStringSubmatch(fe.Message)[1]
		if refused, ok := refusalOf(name); ok {
			ce.Message, ce.Hint = refused.message, refused.hint
			break
		}
		ce.Message = fmt.Sprintf("unknown variable %q", name)
		ce.Hint = unknownVariableHint(name, kind)
	case stepField.Get().MatchString(fe.Message):
		unknownField(ce, "step", stepField.Get().FindStringSubmatch(fe.Message)[1], stepFieldNames)
	case phaseField.Get().MatchString(fe.Message):
		unknownField(ce, "phase", phaseField.Get().FindStringSubmatch(fe.Message)[1], PhaseFieldNames)
	case strings.HasPrefix(fe.Message, "bad number syntax: "):
		badNumber(ce, source, fe.From)
	case undefinedIndex.Get().MatchString(fe.Message), noField.Get().MatchString(fe.Message), elementOf.Get().MatchString(fe.Message):
		explainMember(ce, source, fe)
	case strings.Contains(fe.Message, "time.Duration and string"), strings.Contains(fe.Message, "string and time.Duration"):
		ce.Hint = `durations are written duration("30m"), not "30m"`
	case strings.HasSuffix(fe.Message, "exceeds maximum allowed nodes"):
		ce.Message = fmt.Sprintf("the expression is too long: it has more than %d parts", conf.DefaultMaxNodes)
		ce.Hint = "split it into several triggers, or test fewer things in one"
	case fe.Message == "too many arguments to call date":
		ce.Hint = `date(text) or date(text, layout); a date is read in UTC unless it has an offset, e.g. date("2026-01-02T15:04:05+01:00")`
	}
	ce.Message = plainTypes(ce.Message)
	return ce
}

// unknownVariableHint is what a name no expression knows may have meant:
// a variable like it, or, in a when:, a key of the spec.
func unknownVariableHint(name string, kind Kind) string {
	names := VariableNames()
	if kind == When {
		names = WhenVariables
	}
	switch near := Closest(name, names); {
	case near != "":
		return fmt.Sprintf("did you mean %q?", near)
	case kind == When:
		return fmt.Sprintf("a key of the spec's frontmatter is read as %s; a when: reads spec, phases.<name> and files_changed", Reference("spec", name))
	}
	return "see docs/expressions.md for the variables an expression can read"
}

// Reference is how an expression reads a key of a map: base.key, or
// base["the-key"] when the key is not an identifier.
func Reference(base, key string) string {
	for i, c := range key {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Sprintf("%s[%q]", base, key)
		}
	}
	return base + "." + key
}

// unknownField says that a step's or a phase's result (what) has no field
// name, and which fields it has.
func unknownField(ce *CompileError, what, name string, fields []string) {
	ce.Message = fmt.Sprintf("a %s has no field %q", what, name)
	ce.Hint = fmt.Sprintf("a %s has %s", what, strings.Join(fields, ", "))
	if near := Closest(name, fields); near != "" {
		ce.Hint = fmt.Sprintf("did you mean %q? (%s)", near, ce.Hint)
	}
}

// goTypes are the names of Go types that expr's messages use, and what a
// reader of phases.yaml calls them; the longest first.
var goTypes = lazy.Value[*strings.Replacer]{New: func() *strings.Replacer {
	return strings.NewReplacer(
		"map[string]triggers.StepVars", "steps (step results by name)",
		"map[string]triggers.PhaseVars", "phases (phase results by name)", "triggers.PhaseVars", "a phase result",
		"map[string]interface {}", "a map", "interface {}", "a value of any type",
		"triggers.StepVars", "a step result", "time.Duration", "duration", "float64", "float")
}}

// plainTypes writes the Go types named in a message as phases.yaml's
// words: "duration", not "time.Duration".
func plainTypes(message string) string { return goTypes.Get().Replace(message) }

// badNumber explains expr's "bad number syntax": most often a duration
// written bare inside an expression (1s * 2, elapsed > 30m), which only
// duration("...") makes one. The caret goes to the start of what was
// written.
func badNumber(ce *CompileError, source string, at int) {
	runes := []rune(source)
	if at < 0 || at > len(runes) {
		return
	}
	start, end := at, at
	for start > 0 && (numberRune(runes[start-1]) || unicode.IsLetter(runes[start-1])) {
		start--
	}
	for start < at && !numberRune(runes[start]) {
		start++ // a name before the number: a1s is no number written
	}
	for end < len(runes) && (numberRune(runes[end]) || unicode.IsLetter(runes[end])) {
		end++
	}
	written := string(runes[start:end])
	ce.Line, ce.Column = lineColumn(source, start)
	example := func(d string) string {
		fixed := string(runes[:start]) + fmt.Sprintf("duration(%q)", d) + string(runes[end:])
		if strings.Contains(fixed, "\n") || utf8.RuneCountInString(fixed) > 80 {
			return fmt.Sprintf("duration(%q)", d)
		}
		return fixed
	}
	switch _, err := ParseDuration(written); {
	case err == nil:
		ce.Message = fmt.Sprintf("%s is a duration written bare: inside an expression a duration is written duration(%q)", written, written)
		ce.Hint = fmt.Sprintf("write %s; only a retry.backoff that is one duration and nothing else may be written bare (10s)", example(written))
	case durationLiteral.Get().MatchString(written) && !hexLike.Get().MatchString(written):
		ce.Message = fmt.Sprintf("%s is neither a number nor a duration", written)
		ce.Hint = `a duration is written duration("30m") in an expression, with the units ms, s, m, h and d (1h30m, 7d)`
	default:
		ce.Message = fmt.Sprintf("%s is not a number", written)
		ce.Hint = "write a number such as 15000, 1.5 or 1e5; a duration as duration(\"30m\")"
	}
}

// hexLike is a number written in base 16, 8 or 2: 0x1g is no duration.
var hexLike = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^0[xXoObB]`) }}

func numberRune(r rune) bool { return r >= '0' && r <= '9' || r == '.' || r == '_' }

var (
	// undefinedIndex is expr's "type string[int] is undefined": [ ] on a
	// value that has no elements.
	undefinedIndex = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^type (.+)\[(.+)\] is undefined$`) }}
	// noField is expr's "type string has no field x".
	noField = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^type (.+) has no (field|method) (\S+)$`) }}
	// elementOf is expr's "cannot use int to get an element from map[...]".
	elementOf = lazy.Value[*regexp.Regexp]{New: func() *regexp.Regexp { return regexp.MustCompile(`^cannot use (.+) to get an element from (.+)$`) }}
)

// explainMember rewords expr's messages about reading a part of a value
// (x[i], x.f) that has no such part: they name Go types (string[int],
// map[string]triggers.StepVars). The message names the value as written
// and what it is; the hint says what can be done with it.
func explainMember(ce *CompileError, source string, fe *file.Error) {
	member := memberAt(source, fe.From)
	if member == nil {
		return
	}
	base := writtenBase(source, member)
	var kind string
	if m := undefinedIndex.Get().FindStringSubmatch(fe.Message); m != nil {
		kind = m[1]
	} else if m := noField.Get().FindStringSubmatch(fe.Message); m != nil {
		kind = m[1]
	}
	what := map[string]string{"string": "text (a string)", "int": "a whole number", "float64": "a number",
		"bool": "true or false", "time.Duration": "a duration"}[kind]
	switch {
	case elementOf.Get().MatchString(fe.Message):
		m := elementOf.Get().FindStringSubmatch(fe.Message)
		ce.Message = fmt.Sprintf("%s is read by name, not by %s: %s[%s]", base, articled(m[1]), base, member.Property.String())
		ce.Hint = fmt.Sprintf(`write %s.<name> or %s["name"], such as steps.test.exit_code`, base, base)
	case what == "":
		return
	case noField.Get().MatchString(fe.Message):
		name := noField.Get().FindStringSubmatch(fe.Message)[3]
		ce.Message = fmt.Sprintf("%s is %s: it has no field %q", base, what, name)
		ce.Hint = "fields are read from steps.<name> (" + strings.Join(stepFieldNames, ", ") + ") and from spec.<key>; see docs/expressions.md"
	case kind == "string":
		ce.Message = fmt.Sprintf("%s is %s: [%s] cannot take one element of it", base, what, member.Property.String())
		ce.Hint = fmt.Sprintf(`take a part of the text with a slice, such as %s[-200:] (its last 200 characters), or test it with contains, startsWith, endsWith or matches`, base)
	default:
		ce.Message = fmt.Sprintf("%s is %s: it has no elements to take with [%s]", base, what, member.Property.String())
		ce.Hint = `only steps (steps["test"].exit_code), spec (spec["priority"]) and the lists in spec can be read with [ ]; see docs/expressions.md`
	}
}

// memberAt finds the x[i] or x.f of source that expr's error at offset
// is about: the member itself, or its property.
func memberAt(source string, offset int) *ast.MemberNode {
	tree, err := parser.Parse(source)
	if err != nil {
		return nil
	}
	var found *ast.MemberNode
	ast.Walk(&tree.Node, visitor(func(node ast.Node) {
		if m, ok := node.(*ast.MemberNode); ok && found == nil &&
			(m.Location().From == offset || m.Property.Location().From == offset) {
			found = m
		}
	}))
	return found
}

// writtenBase is the value a member reads a part of, as written: from
// the first character of its innermost part to the [ or . of the member.
func writtenBase(source string, member *ast.MemberNode) string {
	start := member.Location().From
	ast.Walk(&member.Node, visitor(func(node ast.Node) {
		start = min(start, node.Location().From)
	}))
	runes := []rune(source)
	if start < 0 || member.Location().From > len(runes) || start >= member.Location().From {
		return member.Node.String()
	}
	return strings.TrimRight(strings.TrimSpace(string(runes[start:member.Location().From])), ".?")
}

// visitor makes a function an ast.Visitor.
type visitor func(ast.Node)

func (f visitor) Visit(node *ast.Node) { f(*node) }

// unclosedQuote returns the rune offset of the quote that opens a text
// literal never closed, or -1.
func unclosedQuote(source string) int {
	open, quote, escaped := -1, rune(0), false
	for i, r := range []rune(source) {
		switch {
		case quote == 0 && (r == '"' || r == '\'' || r == '`'):
			open, quote = i, r
		case quote == 0:
		case escaped:
			escaped = false
		case r == '\\' && quote != '`':
			escaped = true
		case r == quote:
			open, quote = -1, 0
		}
	}
	return open
}

func articled(typ string) string {
	switch typ {
	case "int", "float64", "int64":
		return "a number"
	case "string":
		return "a string"
	case "time.Duration":
		return "a duration"
	}
	return typ
}

// VariableNames returns the names of Variables.
func VariableNames() []string {
	names := make([]string, len(Variables))
	for i, v := range Variables {
		names[i] = v.Name
	}
	return names
}

// refusal is a part of an expression that compiles but is refused, at the
// node to point at.
type refusal struct {
	at      ast.Node
	message string
	hint    string
}

// inspect finds the variables an expression reads, where each is first
// read, its steps.<name> and phases.<name> references, and the first part
// refused: a constant duration("...") argument that does not parse, or a
// call of .Local().
func inspect(root ast.Node) *inspector {
	v := &inspector{seen: map[string]bool{}, first: map[string]ast.Node{}}
	ast.Walk(&root, v)
	if v.seen["$env"] {
		// $env["name"] can read anything: claim every variable.
		v.reads = VariableNames()
	}
	sort.Strings(v.reads)
	return v
}

type inspector struct {
	seen      map[string]bool
	first     map[string]ast.Node
	reads     []string
	refs      []StepRef
	phaseRefs []StepRef
	specRefs  []StepRef
	refused   *refusal
}

// outOfScope refuses a variable the kind of expression cannot read: a
// when: is decided before its phase runs, so it reads only what is known
// then (WhenVariables); the phases a when: reads are not known to a
// running step's expressions.
func (v *inspector) outOfScope(kind Kind) *refusal {
	if v.seen["$env"] {
		if kind != When {
			return nil
		}
		return &refusal{at: v.first["$env"], message: "a phase's when: cannot read $env: it is decided before the phase runs, when most variables are not known",
			hint: "read spec, phases and files_changed by name"}
	}
	for _, name := range v.reads {
		switch {
		case kind == When && !slices.Contains(WhenVariables, name):
			return &refusal{at: v.first[name],
				message: fmt.Sprintf("a phase's when: is decided before the phase runs: %s is not known then", name),
				hint:    "a when: reads spec (the spec's frontmatter), phases.<name>.status, .files_changed, .attempts (earlier phases) and files_changed (files the session changed so far)"}
		case kind != When && name == "phases":
			return &refusal{at: v.first[name],
				message: "phases is read only by a phase's when:",
				hint:    "while a step runs, read its phase's own results: steps.<name>, files_changed, attempt"}
		}
	}
	return nil
}

func (v *inspector) refuse(at ast.Node, message, hint string) {
	if v.refused == nil {
		v.refused = &refusal{at: at, message: message, hint: hint}
	}
}

func (v *inspector) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if !v.seen[n.Value] {
			v.seen[n.Value] = true
			v.first[n.Value] = n
			v.reads = append(v.reads, n.Value)
		}
	case *ast.CallNode:
		callee, ok := n.Callee.(*ast.IdentifierNode)
		if !ok || callee.Value != "duration" || len(n.Arguments) != 1 {
			return
		}
		if arg, ok := n.Arguments[0].(*ast.StringNode); ok {
			if _, err := ParseDuration(arg.Value); err != nil {
				v.refuse(arg, fmt.Sprintf("duration(%q): %q is not a duration", arg.Value, arg.Value),
					"use a number and a unit: 90s, 30m, 2h, 1h30m or 7d")
			}
		}
	case *ast.BinaryNode:
		if refused := divisionByZero(n); refused != nil {
			v.refuse(refused.at, refused.message, refused.hint)
		}
	case *ast.MemberNode:
		if name, ok := n.Property.(*ast.StringNode); ok && n.Method && name.Value == "Local" {
			// time.Time's Local() moves a date into the machine's zone.
			v.refuse(n.Property, ".Local() reads the time zone of the machine, which differs between machines",
				"dates are in UTC (or in the offset they were written with); use them as they are")
			return
		}
		id, ok := n.Node.(*ast.IdentifierNode)
		if !ok {
			return
		}
		name, ok := n.Property.(*ast.StringNode)
		switch {
		case !ok:
		case id.Value == "steps":
			v.refs = append(v.refs, StepRef{Name: name.Value, Offset: n.Property.Location().From})
		case id.Value == "phases":
			v.phaseRefs = append(v.phaseRefs, StepRef{Name: name.Value, Offset: n.Property.Location().From})
		case id.Value == "spec":
			v.specRefs = append(v.specRefs, StepRef{Name: name.Value, Offset: n.Property.Location().From})
		}
	}
}

// Eval runs a condition against env. A run-time error is returned as an
// *EvalError, never folded into false.
func (e *Expression) Eval(env *Env) (bool, error) {
	var machine vm.VM
	return e.evalOn(&machine, env)
}

// evalOn is Eval on a machine of the caller's, which a caller that
// evaluates often keeps: its stack is then allocated once.
func (e *Expression) evalOn(machine *vm.VM, env *Env) (bool, error) {
	if e.flag > 0 {
		return reflect.ValueOf(env).Elem().Field(e.flag - 1).Bool(), nil
	}
	out, err := machine.Run(e.program, env)
	if err != nil {
		return false, e.evalError(err)
	}
	b, ok := out.(bool)
	if !ok {
		return false, e.evalError(fmt.Errorf("it gave %T, not true or false", out))
	}
	return b, nil
}

// EvalDuration runs a duration expression against env; a run-time error is
// an *EvalError.
func (e *Expression) EvalDuration(env *Env) (time.Duration, error) {
	out, err := expr.Run(e.program, env)
	if err != nil {
		return 0, e.evalError(err)
	}
	d, err := asDuration(out)
	if err != nil {
		return 0, e.evalError(err)
	}
	return d, nil
}
