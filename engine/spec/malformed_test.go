package spec_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// malformedProblem is one problem a malformed input must produce. Line and
// Col are computed by hand from the input: the 1-based line and the 1-based
// column (in characters) of the offending character.
type malformedProblem struct {
	file string // "" for phases.yaml, or "spec.md"
	line int
	col  int
	msg  string // a substring of Problem.Message
	hint string // when set, a substring of Problem.Hint
}

// malformedCase is one malformed phases.yaml (and optionally spec.md, which
// the yaml names with spec: spec.md) and every problem it must produce.
type malformedCase struct {
	name  string
	yaml  string
	spec  string
	wants []malformedProblem
}

// specHeader is a valid phases.yaml head that names spec.md; the phase it
// lists is on line 5.
const specHeader = "version: 1\nagent: {kind: claude}\nspec: spec.md\nphases:\n  - name: build\n"

var malformedCases = []malformedCase{
	// YAML syntax.
	{
		name: "unclosed flow sequence",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps: [{run: make}\n",
		// The [ that is never closed.
		wants: []malformedProblem{{line: 5, col: 12, msg: "YAML syntax"}},
	},
	{
		name: "unclosed double quote",
		yaml: "version: 1\nagent: {kind: claude}\nname: \"build\nphases:\n  - name: build\n",
		// The opening " that is never closed.
		wants: []malformedProblem{{line: 3, col: 7, msg: "YAML syntax"}},
	},
	{
		name: "bad indentation",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n steps: []\n",
		// A key indented by one space: neither top level nor in the phase.
		wants: []malformedProblem{{line: 5, col: 2, msg: "YAML syntax"}},
	},
	{
		name:  "tab used for indentation",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n\t- name: build\n",
		wants: []malformedProblem{{line: 4, col: 1, msg: "YAML syntax"}},
	},

	// Wrong types.
	{
		name:  "name as a list",
		yaml:  "version: 1\nname: [a, b]\nagent: {kind: claude}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 2, col: 7, msg: "name must be a string, not a list"}},
	},
	{
		name:  "version as a string",
		yaml:  "version: one\nagent: {kind: claude}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 1, col: 10, msg: "version must be a whole number, not a string"}},
	},
	{
		name:  "args as a string",
		yaml:  "version: 1\nagent:\n  kind: claude\n  args: --verbose\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 9, msg: "agent.args must be a list, not a string"}},
	},
	{
		name: "auto_advance as a quoted string",
		yaml: "version: 1\nagent: {kind: claude}\ndefaults:\n  auto_advance: \"yes\"\nphases:\n  - name: build\n",
		// The value "yes" starts at its opening quote.
		wants: []malformedProblem{{line: 4, col: 17, msg: "defaults.auto_advance must be true or false, not a string"}},
	},
	{
		name:  "auto_advance as a plain string",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    auto_advance: always\n",
		wants: []malformedProblem{{line: 5, col: 19, msg: "phases[0].auto_advance must be true or false, not a string"}},
	},
	{
		name:  "agent as a string",
		yaml:  "version: 1\nagent: claude\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 2, col: 8, msg: "agent must be a mapping (key: value lines), not a string"}},
	},
	{
		name:  "env as a list",
		yaml:  "version: 1\nagent:\n  kind: claude\n  env: [FOO=bar]\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 8, msg: "agent.env must be a mapping (key: value lines), not a list"}},
	},
	{
		name:  "on with a misspelt event",
		yaml:  "version: 1\nagent: {kind: claude}\non:\n  pausd: notify-send paused\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 3, msg: `unknown key "pausd" in on`}},
	},
	{
		name:  "on hook as a mapping",
		yaml:  "version: 1\nagent: {kind: claude}\non:\n  failed: {run: ./page-me}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 11, msg: "on.failed must be a shell line or a list of them, not a mapping"}},
	},
	{
		name:  "on hook with an empty command in its list",
		yaml:  "version: 1\nagent: {kind: claude}\non:\n  paused: [echo paused, \"\"]\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 25, msg: "on.paused[1] is an empty command"}},
	},
	{
		name:  "on as a list",
		yaml:  "version: 1\nagent: {kind: claude}\non: [notify-send]\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 3, col: 5, msg: "on must be a mapping"}},
	},
	{
		name:  "on hook misspelt in frontmatter",
		yaml:  specHeader,
		spec:  "---\npipeline:\n  on:\n    complete: echo done\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 4, col: 5, msg: `unknown key "complete" in pipeline.on`}},
	},
	{
		name:  "phases as a mapping",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  build:\n    prompt: Build it.\n",
		wants: []malformedProblem{{line: 4, col: 3, msg: "phases must be a list, not a mapping"}},
	},
	{
		name:  "phase as a string",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - build\n",
		wants: []malformedProblem{{line: 4, col: 5, msg: "phases[0] must be a mapping (key: value lines), not a string"}},
	},
	{
		name:  "steps as a string",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps: go test ./...\n",
		wants: []malformedProblem{{line: 5, col: 12, msg: "phases[0].steps must be a list, not a string"}},
	},
	{
		name:  "file is a list",
		yaml:  "- version: 1\n",
		wants: []malformedProblem{{line: 1, col: 1, msg: "the file must be a mapping (key: value lines), not a list"}},
	},
	{
		name:  "expression as a mapping",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: {a: b}\n",
		wants: []malformedProblem{{line: 5, col: 16, msg: "phases[0].done_when must be an expression, not a mapping"}},
	},

	// Unknown keys.
	{
		name:  "unknown top-level key",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nnmae: build\n",
		wants: []malformedProblem{{line: 5, col: 1, msg: `unknown key "nmae" at the top level`, hint: `did you mean "name"?`}},
	},
	{
		name: "unknown top-level key with no near key",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\ncolour: blue\n",
		wants: []malformedProblem{{line: 5, col: 1, msg: `unknown key "colour" at the top level`,
			hint: "the keys allowed here are agent, backend, checkpoint, compact_prompt, defaults, name, notify, on, phases, resume_context, spec, spec_status, telemetry, version, watch, watch_debounce"}},
	},
	{
		name:  "telemetry endpoint that is no URL",
		yaml:  "version: 1\nagent: {kind: claude}\ntelemetry:\n  endpoint: 127.0.0.1:4318\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 13, msg: `telemetry.endpoint "127.0.0.1:4318" is not an http(s) URL`, hint: "http://127.0.0.1:4318"}},
	},
	{
		name:  "telemetry protocol not spoken",
		yaml:  "version: 1\nagent: {kind: claude}\ntelemetry: {endpoint: 'http://c:4318', protocol: grpc}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 3, col: 50, msg: `telemetry.protocol "grpc" is not spoken`, hint: "http/protobuf"}},
	},
	{
		name: "checkpoint that is not a mode",
		yaml: "version: 1\nagent: {kind: claude}\ncheckpoint: ref\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 3, col: 13, msg: `checkpoint "ref" is not a checkpoint mode`,
			hint: `did you mean "refs"? (one of refs, commit, off)`}},
	},
	{
		name:  "unknown key in agent",
		yaml:  "version: 1\nagent:\n  kind: claude\n  modle: opus\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 3, msg: `unknown key "modle" in agent`, hint: `did you mean "model"?`}},
	},
	{
		name:  "unknown key in retry",
		yaml:  "version: 1\nagent: {kind: claude}\ndefaults:\n  retry:\n    backof: 10s\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 5, col: 5, msg: `unknown key "backof" in defaults.retry`, hint: `did you mean "backoff"?`}},
	},
	{
		name:  "unknown key in a phase",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    promt: Build it.\n",
		wants: []malformedProblem{{line: 5, col: 5, msg: `unknown key "promt" in phases[0]`, hint: `did you mean "prompt"?`}},
	},
	{
		name:  "unknown key in a step",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps:\n      - run: make\n        timout: 5m\n",
		wants: []malformedProblem{{line: 7, col: 9, msg: `unknown key "timout" in phases[0].steps[0]`, hint: `did you mean "timeout"?`}},
	},

	// Version and phases.
	{
		name:  "missing version",
		yaml:  "agent: {kind: claude}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 1, col: 1, msg: "version is missing", hint: "version: 1"}},
	},
	{
		name:  "version 2",
		yaml:  "version: 2\nagent: {kind: claude}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 1, col: 10, msg: "version 2 is not one this pipeline reads"}},
	},
	{
		name:  "missing phases",
		yaml:  "version: 1\nagent: {kind: claude}\n",
		wants: []malformedProblem{{line: 1, col: 1, msg: "phases is missing"}},
	},
	{
		name:  "empty phases list",
		yaml:  "version: 1\nagent: {kind: claude}\nphases: []\n",
		wants: []malformedProblem{{line: 3, col: 9, msg: "phases is empty"}},
	},
	{
		name: "phases with no value",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n",
		// Nothing follows phases:, so the key is the place to point at.
		wants: []malformedProblem{{line: 3, col: 1, msg: "phases is empty"}},
	},
	{
		name:  "duplicate phase names",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n  - name: build\n",
		wants: []malformedProblem{{line: 5, col: 11, msg: `phase "build" is defined twice (first as phases[0])`}},
	},
	{
		name:  "phase without a name",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - prompt: Build it.\n",
		wants: []malformedProblem{{line: 4, col: 5, msg: "phases[0] has no name"}},
	},
	{
		name:  "invalid phase name characters",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build/test\n",
		wants: []malformedProblem{{line: 4, col: 11, msg: `phase name "build/test" is not a plain name`}},
	},

	// Steps.
	{
		name: "duplicate step names",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps:\n" +
			"      - name: test\n        run: go test ./...\n      - name: test\n        run: go vet ./...\n",
		wants: []malformedProblem{{line: 8, col: 15, msg: `two steps of phase "build" are named "test"`}},
	},
	{
		name:  "two unnamed run steps",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps:\n      - run: make\n      - run: make test\n",
		wants: []malformedProblem{{line: 7, col: 9, msg: `two steps of phase "build" are named "run"`, hint: "name:"}},
	},
	{
		name:  "step with both run and agent",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps:\n      - run: make\n        agent: {}\n",
		wants: []malformedProblem{{line: 6, col: 9, msg: "phases[0].steps[0] has both run and agent"}},
	},
	{
		name:  "step with neither run nor agent",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps:\n      - name: think\n        timeout: 5m\n",
		wants: []malformedProblem{{line: 6, col: 9, msg: "phases[0].steps[0] has neither run nor agent"}},
	},
	{
		name:  "invalid step name characters",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps:\n      - name: go test\n        run: go test ./...\n",
		wants: []malformedProblem{{line: 6, col: 15, msg: `step name "go test" is not a plain name`}},
	},
	{
		name:  "prompt on a run step",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps:\n      - run: make\n        prompt: Build it.\n",
		wants: []malformedProblem{{line: 7, col: 9, msg: "phases[0].steps[0].prompt is only for agent steps"}},
	},

	// Agents.
	{
		name:  "agent kind misspelt",
		yaml:  "version: 1\nagent: {kind: claud}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 2, col: 15, msg: `agent.kind "claud" is not an agent kind`, hint: `did you mean "claude"?`}},
	},
	{
		name:  "kind command without command",
		yaml:  "version: 1\nagent: {kind: command}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 2, col: 15, msg: "agent has kind: command but no command"}},
	},
	{
		name: "command with kind claude",
		yaml: "version: 1\nagent:\n  kind: claude\n  command: [./bin/agent]\nphases:\n  - name: build\n",
		// The offending entry is the command key, as for "prompt is only
		// for agent steps", which points at its key.
		wants: []malformedProblem{{line: 4, col: 3, msg: "agent.command is only for kind: command"}},
	},
	{
		name:  "agent step with no agent kind anywhere",
		yaml:  "version: 1\nphases:\n  - name: build\n    steps:\n      - agent: {}\n",
		wants: []malformedProblem{{line: 5, col: 9, msg: `phase "build", step "agent" is an agent step but no agent kind is set`}},
	},

	// Expressions.
	{
		name:  "expression with an unknown variable",
		yaml:  "version: 1\nagent: {kind: claude}\ndefaults:\n  pause_when: {tokens: tokns > 15000}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 24, msg: `defaults.pause_when.tokens: unknown variable "tokns"`, hint: `did you mean "tokens"?`}},
	},
	{
		name: "expression syntax error",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: exit_code == 0 )\n",
		// The stray ).
		wants: []malformedProblem{{line: 5, col: 31, msg: `phases[0].done_when: unexpected ")"`}},
	},
	{
		name:  "single equals sign in an expression",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: exit_code = 0\n",
		wants: []malformedProblem{{line: 5, col: 26, msg: `phases[0].done_when: unexpected "="`, hint: "compare with =="}},
	},
	{
		name: "expression with a text never closed",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: output contains \"FAIL\n",
		// The quote that opens the text, as for a YAML quote never closed.
		wants: []malformedProblem{{line: 5, col: 32, msg: "phases[0].done_when: the text opened here is never closed"}},
	},
	{
		name: "expression cut short",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: exit_code ==\n",
		// Just past the last character, where the operand is missing.
		wants: []malformedProblem{{line: 5, col: 28, msg: "phases[0].done_when:"}},
	},
	// A phase's when: reads only what is known before the phase runs.
	{
		name:  "when reading a variable of a running step",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    when: tokens > 5\n",
		wants: []malformedProblem{{line: 5, col: 11, msg: "phases[0].when: a phase's when: is decided before the phase runs: tokens is not known then", hint: "phases.<name>.status"}},
	},
	{
		name:  "when written as a list",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    when: [spec.priority]\n",
		wants: []malformedProblem{{line: 5, col: 11, msg: "phases[0].when must be an expression, not a list", hint: `spec.priority != "low"`}},
	},
	{
		name: "when reading a later phase",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    when: phases.docs.status == \"completed\"\n  - name: docs\n",
		wants: []malformedProblem{{line: 5, col: 18, msg: `phase "build": when reads phases.docs, but "docs" is not an earlier phase`,
			hint: "this is the first phase"}},
	},
	{
		name: "when reading a misspelt phase",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n  - name: docs\n    when: phases.biuld.files_changed > 0\n",
		wants: []malformedProblem{{line: 6, col: 18, msg: `phase "docs": when reads phases.biuld, but no phase is named "biuld"`,
			hint: "did you mean phases.build?"}},
	},
	{
		name:  "when of a phase in the spec with a single equals sign",
		yaml:  specHeader,
		spec:  "---\npipeline:\n  phases:\n    - name: build\n      when: spec.priority = 1\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 5, col: 27, msg: `pipeline.phases[0].when: unexpected "="`, hint: "compare with =="}},
	},
	{
		name:  "pause_when reading phases",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    pause_when: {x: phases.build.status == \"done\"}\n",
		wants: []malformedProblem{{line: 5, col: 21, msg: "phases is read only by a phase's when:"}},
	},
	{
		name:  "condition that is not true or false",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: exit_code + 1\n",
		wants: []malformedProblem{{line: 5, col: 16, msg: "a condition must give true or false, but this gives a number"}},
	},
	{
		name:  "backoff that is not a duration",
		yaml:  "version: 1\nagent: {kind: claude}\ndefaults:\n  retry:\n    backoff: attempt * 2\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 5, col: 14, msg: "defaults.retry.backoff: the expression gives a number, not a duration"}},
	},
	{
		name:  "block scalar expression with the error on its second line",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: |\n      exit_code == 0 &&\n        tokns < 5\n",
		wants: []malformedProblem{{line: 7, col: 9, msg: `unknown variable "tokns"`}},
	},
	{
		name:  "folded plain expression with the error on its second line",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: exit_code == 0 &&\n      tokns < 5\n",
		wants: []malformedProblem{{line: 6, col: 7, msg: `unknown variable "tokns"`}},
	},
	{
		name:  "double-quoted expression",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: \"exit_code == 0 && tokns < 5\"\n",
		wants: []malformedProblem{{line: 5, col: 35, msg: `unknown variable "tokns"`}},
	},
	{
		name: "double-quoted expression with escaped quotes",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: \"spec.status == \\\"done\\\" && tokns > 1\"\n",
		// \" is two characters in the file and one in the expression.
		wants: []malformedProblem{{line: 5, col: 44, msg: `unknown variable "tokns"`}},
	},
	{
		name:  "single-quoted expression with doubled quotes",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: 'spec.status == ''done'' && tokns > 1'\n",
		wants: []malformedProblem{{line: 5, col: 44, msg: `unknown variable "tokns"`}},
	},
	{
		name: "expression after a non-ASCII character on its line",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - {name: build, prompt: \"café\", done_when: tokns > 1}\n",
		// Columns count characters: é is one.
		wants: []malformedProblem{{line: 4, col: 46, msg: `unknown variable "tokns"`}},
	},
	{
		name:  "expression in a file with CRLF line ends",
		yaml:  "version: 1\r\nagent: {kind: claude}\r\ndefaults:\r\n  pause_when: {tokens: tokns > 15000}\r\nphases:\r\n  - name: build\r\n",
		wants: []malformedProblem{{line: 4, col: 24, msg: `unknown variable "tokns"`}},
	},
	{
		name:  "trigger name that is not a plain name",
		yaml:  "version: 1\nagent: {kind: claude}\ndefaults:\n  pause_when:\n    too many: tokens > 1\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 5, col: 5, msg: `trigger name "too many" in defaults.pause_when is not a plain name`}},
	},
	{
		name: "done_when naming a step the phase lacks",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps:\n      - name: test\n        run: go test ./...\n" +
			"    done_when: steps.tset.exit_code == 0\n",
		wants: []malformedProblem{{line: 8, col: 22, msg: `phase "build": done_when reads steps.tset, but the phase has no step "tset"`, hint: "did you mean steps.test?"}},
	},

	// Durations.
	{
		name:  "timeout with an unknown unit",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    timeout: 30x\n",
		wants: []malformedProblem{{line: 5, col: 14, msg: `phases[0].timeout: "30x" is not a duration`}},
	},
	{
		name:  "negative timeout",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    timeout: -5m\n",
		wants: []malformedProblem{{line: 5, col: 14, msg: `phases[0].timeout: "-5m" is negative`}},
	},
	{
		name: "timeout too long to represent",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    timeout: 999999999d\n",
		// Before, it wrapped around time.Duration: no limit, silently.
		wants: []malformedProblem{{line: 5, col: 14, msg: `phases[0].timeout: "999999999d" is too long: a duration is at most 106751d, about 292 years`}},
	},
	{
		name:  "step idle_timeout too long to represent",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    steps:\n      - run: make\n        idle_timeout: 9999999999h\n",
		wants: []malformedProblem{{line: 7, col: 23, msg: `phases[0].steps[0].idle_timeout: "9999999999h" is too long`}},
	},
	{
		name: "back-off expression always negative",
		yaml: "version: 1\nagent: {kind: claude}\ndefaults:\n  retry:\n    backoff: duration(\"10s\") - duration(\"1m\")\nphases:\n  - name: build\n",
		// The - that makes it negative.
		wants: []malformedProblem{{line: 5, col: 30, msg: "defaults.retry.backoff: the expression always gives -50s, a negative duration"}},
	},
	{
		name: "trigger that divides by zero",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    pause_when:\n      spin: tokens % 0 > 1\n",
		// Before, it validated and then paused every run with
		// expression-error.
		wants: []malformedProblem{{line: 6, col: 20, msg: "phases[0].pause_when.spin: tokens % 0 divides by zero: it fails each time it is evaluated"}},
	},
	{
		name:  "condition with a part that always fails",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    done_when: exit_code == 0 && tokens < int(\"many\")\n",
		wants: []malformedProblem{{line: 5, col: 43, msg: `phases[0].done_when: int("many") always fails: `}},
	},
	{
		name:  "duration with days and a bad rest",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    idle_timeout: 1d12x\n",
		wants: []malformedProblem{{line: 5, col: 19, msg: `phases[0].idle_timeout: "1d12x" is not a duration`}},
	},

	// YAML structure.
	{
		name:  "duplicate key in one mapping",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    prompt: a\n    prompt: b\n",
		wants: []malformedProblem{{line: 6, col: 5, msg: `key "prompt"`}},
	},
	{
		name: "duplicate key and an unknown key",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    prompt: a\n    prompt: b\nnmae: build\n",
		wants: []malformedProblem{
			{line: 6, col: 5, msg: `key "prompt"`},
			{line: 7, col: 1, msg: `unknown key "nmae" at the top level`, hint: `did you mean "name"?`},
		},
	},
	{
		name: "alias to an undefined anchor",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    prompt: *nothing\n",
		// The * of the alias.
		wants: []malformedProblem{{line: 5, col: 13, msg: "nothing"}},
	},
	{
		name:  "merge key",
		yaml:  "version: 1\nagent: {kind: claude}\ndefaults: &d\n  timeout: 5m\nphases:\n  - name: build\n    <<: *d\n",
		wants: []malformedProblem{{line: 7, col: 5, msg: "merge keys (<<) are not supported"}},
	},

	// watch and watch_debounce.
	{
		name: "watch glob that is not valid",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch:\n  - specs/*.md\n  - specs/[ab.md\n",
		// The glob, at its first character.
		wants: []malformedProblem{{line: 7, col: 5, msg: `watch[1]: "specs/[ab.md" is not a valid glob`, hint: "close every [ and {"}},
	},
	{
		name: "watch glob that is an absolute path",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch: [specs/*.md, \"/home/ana/notes/*.md\"]\n",
		// At the opening quote, as a value's other problems are.
		wants: []malformedProblem{{line: 5, col: 21, msg: `watch[1]: "/home/ana/notes/*.md" is an absolute path; watch globs are relative to the folder of phases.yaml`,
			hint: "the project's own files only"}},
	},
	{
		name:  "watch glob with a Windows drive",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch:\n  - C:/specs/*.md\n",
		wants: []malformedProblem{{line: 6, col: 5, msg: `watch[0]: "C:/specs/*.md" is an absolute path`}},
	},
	{
		name: "watch glob that climbs out of its folder",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch:\n  - specs/../../shared/*.md\n",
		// specs/.. stays inside; the second .. leaves.
		wants: []malformedProblem{{line: 6, col: 5, msg: `watch[0]: "specs/../../shared/*.md" uses ..; watch globs stay inside the folder of phases.yaml`,
			hint: "the project's own files only"}},
	},
	{
		name:  "watch glob offering the parent folder in braces",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch:\n  - '{specs,..}/*.md'\n",
		wants: []malformedProblem{{line: 6, col: 5, msg: `watch[0]: "{specs,..}/*.md" uses ..`}},
	},
	{
		name: "watch glob that is empty",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch:\n  - \"\"\n  -\n",
		// An empty text at its quote; an item with no value at its dash.
		wants: []malformedProblem{
			{line: 6, col: 5, msg: "watch[0] is empty", hint: "such as specs/**/*.md"},
			{line: 7, col: 3, msg: "watch[1] is empty"},
		},
	},
	{
		name: "watch as a string",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch: specs/**/*.md\n",
		// Like every other list key: one glob is a list of one.
		wants: []malformedProblem{{line: 5, col: 8, msg: "watch must be a list, not a string", hint: "write a list as [a, b]"}},
	},
	{
		name:  "watch item as a mapping",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch:\n  - {glob: specs/*.md}\n",
		wants: []malformedProblem{{line: 6, col: 5, msg: "watch[0] must be a string, not a mapping"}},
	},
	{
		name: "watch glob starting with a star unquoted",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch:\n  - \"**/*.md\"\n  - *.txt\n",
		// YAML reads *.txt as an alias; once, not again when the globs
		// are checked.
		wants: []malformedProblem{{line: 7, col: 5, msg: "alias *.txt names no anchor defined above it", hint: `quote a text that starts with *, such as "**/*.md"`}},
	},
	{
		name: "watch glob starting with two stars unquoted",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch: [**/*.md]\n",
		// The parser stops after the * it read as an alias.
		wants: []malformedProblem{{line: 5, col: 10, msg: "YAML syntax", hint: `quote a text that starts with *, such as "**/*.md"`}},
	},
	{
		name:  "negative watch_debounce",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch: [specs/*.md]\nwatch_debounce: -200ms\n",
		wants: []malformedProblem{{line: 6, col: 17, msg: `watch_debounce: "-200ms" is negative`}},
	},
	{
		name:  "watch_debounce as a list",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\nwatch_debounce: [200ms]\n",
		wants: []malformedProblem{{line: 5, col: 17, msg: "watch_debounce must be a duration such as 30m, not a list"}},
	},
	{
		name: "watch in a spec's pipeline block",
		yaml: specHeader,
		spec: "---\npipeline:\n  watch: [specs/*.md]\n  watch_debounce: 1s\n---\n",
		// One spec does not change what the whole pipeline watches.
		wants: []malformedProblem{
			{file: "spec.md", line: 3, col: 3, msg: `unknown key "watch" in pipeline`, hint: "watch is set in phases.yaml only; a spec's pipeline block may set agent, compact_prompt, defaults, notify, on, phases, spec_status, template"},
			{file: "spec.md", line: 4, col: 3, msg: `unknown key "watch_debounce" in pipeline`, hint: "watch_debounce is set in phases.yaml only"},
		},
	},
	{
		name:  "empty file",
		yaml:  "",
		wants: []malformedProblem{{line: 1, col: 1, msg: "the file is empty"}},
	},
	{
		name:  "file with only a comment",
		yaml:  "# nothing yet\n",
		wants: []malformedProblem{{line: 1, col: 1, msg: "the file is empty"}},
	},
	{
		name: "second YAML document",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n---\nname: other\n",
		// The first character of the second document, after its ---.
		wants: []malformedProblem{{line: 6, col: 1, msg: "a second YAML document (after ---) is not allowed here"}},
	},

	// Issue 9: messages that pointed the wrong way.
	{
		name: "YAML tag include",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    prompt: !include prompts/build.md\n",
		// Read as the text prompts/build.md, silently, before.
		wants: []malformedProblem{{line: 5, col: 13, msg: "YAML tags such as !include are not supported", hint: "includes no other file"}},
	},
	{
		name:  "YAML tag binary",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    prompt: !!binary aGVsbG8=\n",
		wants: []malformedProblem{{line: 5, col: 13, msg: "YAML tags such as !!binary are not supported", hint: "remove the tag"}},
	},
	{
		name:  "YAML tag on a key",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - !!str name: build\n",
		wants: []malformedProblem{{line: 4, col: 5, msg: "YAML tags such as !!str are not supported"}},
	},
	{
		name:  "YAML tag in frontmatter",
		yaml:  specHeader,
		spec:  "---\nstatus: !secret draft\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 2, col: 9, msg: "YAML tags such as !secret are not supported"}},
	},
	{
		name: "anchor on a key",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - &build name: build\n  - *build\n",
		// Before, the key read as "&": unknown key "&" in phases[0].
		wants: []malformedProblem{
			{line: 4, col: 5, msg: `the anchor &build is on the key "name", not on a value`, hint: "put &build alone at the end of the line before name:"},
			{line: 5, col: 5, msg: `alias *build names the anchor on the key "name" (line 4), not a value`},
		},
	},
	{
		name: "negative back-off",
		yaml: "version: 1\nagent: {kind: claude}\ndefaults:\n  retry:\n    backoff: -10s\nphases:\n  - name: build\n",
		// Before: bad number syntax: "10s", at the 1.
		wants: []malformedProblem{{line: 5, col: 14, msg: `defaults.retry.backoff: "-10s" is negative`}},
	},
	{
		name: "version too large for a number",
		yaml: "version: 99999999999999999999999\nagent: {kind: claude}\nphases:\n  - name: build\n",
		// Before: version must be a whole number, not a string.
		wants: []malformedProblem{{line: 1, col: 10, msg: "version 99999999999999999999999 is not one this pipeline reads", hint: "write version: 1"}},
	},
	{
		name:  "version too large for 63 bits",
		yaml:  "version: 18446744073709551615\nagent: {kind: claude}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 1, col: 10, msg: "version 18446744073709551615 is not one this pipeline reads"}},
	},
	{
		name:  "budget too large for a number",
		yaml:  "version: 1\nagent: {kind: claude}\nresume_context: {budget: -99999999999999999999}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 3, col: 26, msg: "resume_context.budget: -99999999999999999999 is too large a number"}},
	},

	// resume_context templates, checked against the data they read.
	{
		name: "resume_context template reading a misspelt field",
		yaml: "version: 1\nagent: {kind: claude}\nresume_context:\n  template: 'Resuming {{.Phse}} after {{.Reason}}'\nphases:\n  - name: build\n",
		// Before, it passed validation, and at run time the whole resume
		// context (human notes included) was dropped without a word.
		wants: []malformedProblem{{line: 4, col: 25, msg: "resume_context.template: a ResumeInput has no field Phse", hint: "did you mean .Phase?"}},
	},
	{
		name:  "resume_context template reading a field of a list item",
		yaml:  "version: 1\nagent: {kind: claude}\nresume_context:\n  template: |\n    Done:\n    {{range .Done}}- {{.Phase}}: {{.Summry}}\n    {{end}}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 6, col: 36, msg: "resume_context.template: a DoneItem has no field Summry", hint: "did you mean .Summary?"}},
	},
	{
		name: "resume_context template reading a field of a text",
		yaml: "version: 1\nagent: {kind: claude}\nresume_context:\n  template: \"{{with $n := .Note}}{{$n.Text}}{{end}}\"\nphases:\n  - name: build\n",
		// The .Text of $n.Text.
		wants: []malformedProblem{{line: 4, col: 38, msg: "resume_context.template: a text has no fields: .Text cannot be read from it"}},
	},
	{
		name:  "resume_context template calling an unknown function",
		yaml:  "version: 1\nagent: {kind: claude}\nresume_context:\n  template: |\n    Resuming {{.Phase}}\n    {{oneline .Note | shout}}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 6, col: 5, msg: `resume_context.template: function "shout" not defined`}},
	},

	// Spec files and their frontmatter.
	{
		name:  "frontmatter never closed",
		yaml:  specHeader,
		spec:  "---\nstatus: draft\n\n# Title\n",
		wants: []malformedProblem{{file: "spec.md", line: 1, col: 1, msg: "the frontmatter opened here is never closed"}},
	},
	{
		name: "YAML error inside frontmatter",
		yaml: specHeader,
		spec: "---\nstatus: draft\ntags: [a, b\n---\n# Title\n",
		// The [ that is never closed, on line 3 of the .md file.
		wants: []malformedProblem{{file: "spec.md", line: 3, col: 7, msg: "YAML syntax"}},
	},
	{
		name:  "frontmatter that is a list",
		yaml:  specHeader,
		spec:  "---\n- status: draft\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 2, col: 1, msg: "the frontmatter must be a mapping (key: value lines), not a list"}},
	},
	{
		name:  "agent_phases not a list",
		yaml:  specHeader,
		spec:  "---\nagent_phases: design\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 2, col: 15, msg: "agent_phases must be a list, not a string"}},
	},
	{
		name:  "agent_phases empty",
		yaml:  specHeader,
		spec:  "---\nagent_phases: []\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 2, col: 15, msg: "agent_phases is empty"}},
	},
	{
		name:  "agent_phases item with two keys",
		yaml:  specHeader,
		spec:  "---\nagent_phases:\n  - design: Focus on the API\n    backend: Build the endpoints\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 3, col: 5, msg: "agent_phases[0] must name one phase, not 2"}},
	},
	{
		name:  "agent_phases naming a phase twice",
		yaml:  specHeader,
		spec:  "---\nagent_phases:\n  - build: Build it.\n  - build: Again.\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 4, col: 5, msg: `phase "build" appears twice in agent_phases`}},
	},
	{
		name:  "unknown key inside pipeline block",
		yaml:  specHeader,
		spec:  "---\npipeline:\n  agnet: {model: opus}\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 3, col: 3, msg: `unknown key "agnet" in pipeline`, hint: `did you mean "agent"?`}},
	},
	{
		name:  "both agent_phases and pipeline.phases",
		yaml:  specHeader,
		spec:  "---\nagent_phases:\n  - build: Build it.\npipeline:\n  phases:\n    - name: build\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 5, col: 3, msg: "both agent_phases and pipeline.phases give the phases"}},
	},
	{
		name:  "expression error inside pipeline block",
		yaml:  specHeader,
		spec:  "---\npipeline:\n  defaults:\n    pause_when: {tokens: tokns > 40000}\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 4, col: 26, msg: `pipeline.defaults.pause_when.tokens: unknown variable "tokns"`}},
	},
	{
		name: "spec done_when naming a step the phase lacks",
		yaml: specHeader,
		spec: "---\npipeline:\n  phases:\n    - name: build\n      done_when: steps.tset.exit_code == 0\n---\n",
		// build has no steps, so it runs one step named agent.
		wants: []malformedProblem{{file: "spec.md", line: 5, col: 24, msg: `phase "build": done_when reads steps.tset, but the phase has no step "tset"`,
			hint: "the phase has one step, steps.agent"}},
	},

	// Compaction: compact_when is a condition like restart_when's, and
	// compact_prompt a text that must say something.
	{
		name:  "compact_when with an unknown variable",
		yaml:  "version: 1\nagent: {kind: claude}\ndefaults:\n  compact_when: context_tokns > 150000\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 17, msg: `defaults.compact_when: unknown variable "context_tokns"`, hint: `did you mean "context_tokens"`}},
	},
	{
		name:  "compact_when that is not true or false",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    compact_when: context_tokens\n",
		wants: []malformedProblem{{line: 5, col: 19, msg: "phases[0].compact_when: a condition must give true or false, but this gives a number"}},
	},
	{
		name: "compact_when syntax error",
		yaml: "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    compact_when: context_tokens > 150000 )\n",
		// The ) that closes nothing.
		wants: []malformedProblem{{line: 5, col: 43, msg: `phases[0].compact_when: unexpected ")"`}},
	},
	{
		name:  "compact_when as a list",
		yaml:  "version: 1\nagent: {kind: claude}\ndefaults:\n  compact_when: [context_tokens > 150000]\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 17, msg: "defaults.compact_when must be an expression, not a list"}},
	},
	{
		name:  "compact_when named like a trigger",
		yaml:  "version: 1\nagent: {kind: claude}\ndefaults:\n  compact_when: {context: context_tokens > 150000}\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 17, msg: "defaults.compact_when must be an expression, not a mapping"}},
	},
	{
		name:  "compact_when misspelt",
		yaml:  "version: 1\nagent: {kind: claude}\ndefaults:\n  compact_whn: context_tokens > 150000\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 3, msg: `unknown key "compact_whn" in defaults`, hint: `did you mean "compact_when"?`}},
	},
	{
		name:  "compact_when with an unknown variable in frontmatter",
		yaml:  specHeader,
		spec:  "---\npipeline:\n  phases:\n    - name: build\n      compact_when: tokns > 1\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 5, col: 21, msg: `pipeline.phases[0].compact_when: unknown variable "tokns"`}},
	},
	{
		name:  "compact_prompt empty",
		yaml:  "version: 1\nagent: {kind: claude}\ncompact_prompt: \"\"\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 3, col: 17, msg: "compact_prompt is empty", hint: "remove the key to use the built-in one"}},
	},
	{
		name: "compact_prompt with no value",
		yaml: "version: 1\nagent: {kind: claude}\ncompact_prompt:\nphases:\n  - name: build\n",
		// Nothing written: the key is the place.
		wants: []malformedProblem{{line: 3, col: 1, msg: "compact_prompt is empty"}},
	},
	{
		name:  "compact_prompt of blank lines",
		yaml:  "version: 1\nagent: {kind: claude}\ncompact_prompt: |\n  \n\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 3, col: 17, msg: "compact_prompt is empty"}},
	},
	{
		name:  "compact_prompt as a list",
		yaml:  "version: 1\nagent: {kind: claude}\ncompact_prompt: [Summarise., Stop.]\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 3, col: 17, msg: "compact_prompt must be a string, not a list"}},
	},
	{
		name:  "compact_prompt as a mapping",
		yaml:  "version: 1\nagent: {kind: claude}\ncompact_prompt:\n  text: Summarise.\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 4, col: 3, msg: "compact_prompt must be a string, not a mapping"}},
	},
	{
		name:  "compact_prompt in a phase",
		yaml:  "version: 1\nagent: {kind: claude}\nphases:\n  - name: build\n    compact_prompt: Summarise.\n",
		wants: []malformedProblem{{line: 5, col: 5, msg: `unknown key "compact_prompt" in phases[0]`, hint: "at the top level of phases.yaml"}},
	},
	{
		name:  "compact_prompt empty in frontmatter",
		yaml:  specHeader,
		spec:  "---\npipeline:\n  compact_prompt: ''\n---\n",
		wants: []malformedProblem{{file: "spec.md", line: 3, col: 19, msg: "pipeline.compact_prompt is empty"}},
	},
	{
		name:  "spec file that does not exist",
		yaml:  "version: 1\nagent: {kind: claude}\nspec: missing.md\nphases:\n  - name: build\n",
		wants: []malformedProblem{{line: 3, col: 7, msg: "missing.md does not exist"}},
	},
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ (review the diff)")

// malformedGoldenDir holds, per row, the error exactly as a user reads it:
// message, numbered source line, caret and hint, as expr's tests keep the
// rendered text of each error.
const malformedGoldenDir = "testdata/malformed"

// goldenName is the file of a row: its name in lower case, each run of
// other characters than letters and digits made one -.
func goldenName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
	}
	return b.String() + ".txt"
}

func TestMalformedInputs(t *testing.T) {
	if n := len(malformedCases); n < 36 {
		t.Fatalf("only %d rows; the table must hold at least 36", n)
	}
	cases := append(append([]malformedCase(nil), malformedCases...), hostileCases...)
	seen, goldens := map[string]bool{}, map[string]bool{}
	for _, tc := range cases {
		golden := goldenName(tc.name)
		if seen[tc.name] || goldens[golden] {
			t.Fatalf("two rows named %q, or with the golden file %s", tc.name, golden)
		}
		seen[tc.name], goldens[golden] = true, true
	}
	checkMalformedGoldens(t, goldens)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := map[string]string{"": filepath.Join(dir, "phases.yaml"), "spec.md": filepath.Join(dir, "spec.md")}
			texts := map[string]string{"": tc.yaml, "spec.md": tc.spec}
			if err := os.WriteFile(files[""], []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.spec != "" {
				if err := os.WriteFile(files["spec.md"], []byte(tc.spec), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := spec.Load(files[""], "")
			var specErr *spec.Error
			if !errors.As(err, &specErr) {
				t.Fatalf("Load gave %v (%T), want a *spec.Error", err, err)
			}
			if mismatches := malformedMismatches(tc, specErr.Problems, files, texts); len(mismatches) > 0 {
				t.Errorf("%s", strings.Join(mismatches, "\n"))
			}
			rendered := strings.ReplaceAll(specErr.Error(), dir+string(filepath.Separator), "")
			malformedGolden(t, goldenName(tc.name), rendered)
		})
	}
}

// malformedGolden compares the rendered error with the row's golden file,
// or writes it under -update.
func malformedGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(malformedGoldenDir, name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./engine/spec -run Malformed -update to write it, and review it)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs; the error now reads:\n%s\n(run go test ./engine/spec -run Malformed -update and review the diff)", path, got)
	}
}

// checkMalformedGoldens fails on a golden file that belongs to no row (a
// row renamed or removed), or under -update removes it.
func checkMalformedGoldens(t *testing.T, names map[string]bool) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(malformedGoldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(malformedGoldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if names[e.Name()] {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(malformedGoldenDir, e.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s/%s belongs to no row of the table; remove it (or run with -update)", malformedGoldenDir, e.Name())
	}
}

// malformedMismatches compares the problems with the row's expectations and
// describes each difference, with the source line and a caret under both the
// expected and the reported column.
func malformedMismatches(tc malformedCase, got []spec.Problem, files, texts map[string]string) []string {
	var out []string
	used := make([]bool, len(got))
	for _, want := range tc.wants {
		file := files[want.file]
		found := false
		for i, p := range got {
			if used[i] || p.File != file || p.Line != want.line || p.Column != want.col ||
				!strings.Contains(p.Message, want.msg) || !strings.Contains(p.Hint, want.hint) {
				continue
			}
			used[i], found = true, true
			break
		}
		if !found {
			out = append(out, fmt.Sprintf("missing: %s:%d:%d: message containing %q, hint containing %q\n%s",
				filepath.Base(file), want.line, want.col, want.msg, want.hint, malformedCaret(texts[want.file], want.line, want.col)))
		}
	}
	if len(got) != len(tc.wants) || len(out) > 0 {
		out = append(out, fmt.Sprintf("the loader reported %d problem(s), the row expects %d:", len(got), len(tc.wants)))
		for i, p := range got {
			mark := "  "
			if !used[i] {
				mark = "! "
			}
			text := tc.yaml
			if filepath.Base(p.File) == "spec.md" {
				text = tc.spec
			}
			out = append(out, fmt.Sprintf("%s%s:%d:%d: %s (hint: %s)\n%s", mark, filepath.Base(p.File), p.Line, p.Column,
				p.Message, p.Hint, malformedCaret(text, p.Line, p.Column)))
		}
	}
	return out
}

// malformedCaret shows line of text with a caret under column col.
func malformedCaret(text string, line, col int) string {
	lines := strings.Split(text, "\n")
	if line < 1 || line > len(lines) {
		return fmt.Sprintf("      (no line %d in the file)", line)
	}
	src := strings.ReplaceAll(strings.TrimRight(lines[line-1], "\r"), "\t", " ")
	pad := max(min(col-1, utf8.RuneCountInString(src)), 0)
	return fmt.Sprintf("      | %s\n      | %s^", src, strings.Repeat(" ", pad))
}

func TestResumeContextTemplateChecked(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "phases.yaml")
	os.WriteFile(path, []byte("version: 1\nresume_context:\n  template: 'resuming {{.Phase'\n  budget: 500\nphases: [{name: a, steps: [{run: x}]}]\n"), 0o644)
	_, err := spec.Load(path, "")
	var specErr *spec.Error
	if !errors.As(err, &specErr) || specErr.Problems[0].Line != 3 || !strings.Contains(specErr.Problems[0].Message, "resume_context.template") {
		t.Fatalf("a broken template: %v", err)
	}
	os.WriteFile(path, []byte("version: 1\nresume_context: {template: 'resuming {{.Phase}}', budget: 500}\nphases: [{name: a, steps: [{run: x}]}]\n"), 0o644)
	plan, err := spec.Load(path, "")
	if err != nil || plan.ResumeTemplate != "resuming {{.Phase}}" || plan.ResumeBudget != 500 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
}
