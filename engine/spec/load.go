package spec

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/pipeline-dev/pipeline/triggers"
)

// Document is a decoded phases.yaml and where each of its values was written.
type Document struct {
	Path     string
	Pipeline Pipeline
	dec      *decoder
	// content is the file as read, for the plan's digest.
	content []byte
}

// LoadFile reads and checks a phases.yaml. Problems in the file come back as
// *Error; a file that cannot be read comes back as the os error.
func LoadFile(path string) (*Document, error) {
	content, err := readPhasesFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, content)
}

// readPhasesFile reads a phases.yaml whole; one over maxYAMLBytes is a
// problem at its place, as Parse reports them.
func readPhasesFile(path string) ([]byte, error) {
	content, size, err := readHead(path, maxYAMLBytes)
	if err != nil {
		return nil, err
	}
	if size < 0 || int64(len(content)) < size {
		dec := newDecoder(path, content, 0)
		dec.tooLarge(size, "the file")
		return nil, dec.problems.err()
	}
	return content, nil
}

// readHead reads at most limit bytes of a file, and returns them with the
// file's size: a phases.yaml of a gigabyte (or /dev/zero) is refused
// without being read. size is -1 when it is not known (a pipe, a device)
// and the file holds more than limit bytes.
func readHead(path string, limit int) (head []byte, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	// Read in one piece when the size is known: io.ReadAll's doublings
	// cost a 1,000-phase status a tenth of its time.
	var buf bytes.Buffer
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() <= int64(limit) {
		buf.Grow(int(info.Size()) + bytes.MinRead)
	}
	if _, err = buf.ReadFrom(io.LimitReader(f, int64(limit)+1)); err != nil {
		return nil, 0, err
	}
	head = buf.Bytes()
	if len(head) <= limit {
		return head, int64(len(head)), nil
	}
	size = -1
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
		size = info.Size()
	}
	return head[:limit], size, nil
}

// Parse checks the phases.yaml content read from path. When the YAML parsed
// but has problems, the partly decoded document comes back with the *Error,
// so that Load can look for more problems before it reports.
func Parse(path string, content []byte) (*Document, error) {
	dec := newDecoder(path, content, 0)
	doc := &Document{Path: path, dec: dec, content: content}
	root := dec.parse(bytes.TrimPrefix(content, []byte(byteOrderMark)), "the file")
	stopped := guard(func() {
		if root != nil {
			root = dec.resolve(root)
		}
		if isNull(root) {
			return
		}
		dec.decode(root, reflect.ValueOf(&doc.Pipeline).Elem(), "", triggers.Condition)
		if _, isMapping := root.(*ast.MappingNode); isMapping || isMappingValue(root) {
			doc.check(root)
		}
	})
	if stopped || isNull(root) {
		if len(dec.problems.list) == 0 {
			dec.reportAt(Position{File: path, Line: 1, Column: 1}, "the file is empty",
				"start with version: 1 and a list of phases; pipeline init writes a commented example")
		}
		return nil, dec.problems.err()
	}
	return doc, dec.problems.err()
}

func isMappingValue(node ast.Node) bool {
	_, ok := node.(*ast.MappingValueNode)
	return ok
}

// origin says where the value at path was written.
func (doc *Document) origin(path string) Origin {
	return Origin{Layer: LayerPipeline, Position: doc.dec.positions[path]}
}

func (doc *Document) check(root ast.Node) {
	d, p := doc.dec, &doc.Pipeline
	top := Position{File: doc.Path, Line: 1, Column: 1}
	switch {
	case p.Version == 0 && !d.has("version"):
		d.reportAt(top, "version is missing", "add version: 1 as the first line")
	case p.Version != 1 && d.has("version") && !d.reportedAt(d.positions["version"]):
		d.reportAt(d.positions["version"], fmt.Sprintf("version %s is not one this pipeline reads", d.numbers["version"]),
			"write version: 1; it is the only version so far")
	}
	switch {
	case !d.has("phases"):
		d.reportAt(top, "phases is missing: a pipeline needs at least one phase",
			"add phases: with a list of - name: ... entries")
	case len(p.Phases) == 0 && d.has("phases") && !d.reportedAt(d.positions["phases"]):
		d.reportAt(d.positions["phases"], "phases is empty: a pipeline needs at least one phase",
			"add - name: ... entries under phases")
	}
	checkAgent(d, p.Agent, "agent")
	if p.Checkpoint != "" && !contains(CheckpointModes, p.Checkpoint) {
		hint := "use one of " + strings.Join(CheckpointModes, ", ")
		if near := triggers.Closest(p.Checkpoint, CheckpointModes); near != "" {
			hint = fmt.Sprintf("did you mean %q? (one of %s)", near, strings.Join(CheckpointModes, ", "))
		}
		d.reportAt(d.positions["checkpoint"], fmt.Sprintf("checkpoint %q is not a checkpoint mode", p.Checkpoint), hint)
	}
	checkBackend(d, p.Backend)
	checkNotify(d, p.Notify, "notify")
	checkTelemetry(d, p.Telemetry)
	if rc := p.ResumeContext; rc != nil {
		if rc.Budget < 0 {
			d.reportAt(d.positions["resume_context.budget"], "resume_context.budget must be a number of tokens above 0", "")
		}
		if place, ok := d.templates["resume_context.template"]; ok {
			d.placeTemplateProblems(place, "resume_context.template", CheckResumeTemplate(rc.Template))
		}
	}
	checkCompactPrompt(d, p.CompactPrompt, "compact_prompt")
	checkPhases(d, p.Phases, "phases")
}

// checkTelemetry reports an endpoint that is no http(s) URL and a
// protocol that is not spoken.
func checkTelemetry(d *decoder, t *Telemetry) {
	if t == nil {
		return
	}
	if e := strings.TrimSpace(t.Endpoint); e != "" && !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") &&
		!d.reportedAt(d.positions["telemetry.endpoint"]) {
		d.reportAt(d.positions["telemetry.endpoint"], fmt.Sprintf("telemetry.endpoint %q is not an http(s) URL", t.Endpoint),
			"write the collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318")
	}
	if t.Protocol != "" && t.Protocol != "http/protobuf" && !d.reportedAt(d.positions["telemetry.protocol"]) {
		d.reportAt(d.positions["telemetry.protocol"], fmt.Sprintf("telemetry.protocol %q is not spoken", t.Protocol),
			"write http/protobuf (OTLP over HTTP, the collector's port 4318), or leave it out")
	}
}

// checkNotify reports a webhook without a URL that can be posted to, a
// format or an event that is none.
func checkNotify(d *decoder, n *Notify, path string) {
	if n == nil {
		return
	}
	for i, w := range n.Webhook {
		at := fmt.Sprintf("%s.webhook[%d]", path, i)
		url := strings.TrimSpace(w.URL)
		if !d.reportedAt(d.positions[at+".url"]) && !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "${") {
			where := d.positions[at+".url"]
			if !d.has(at + ".url") {
				where = d.positions[at]
			}
			d.reportAt(where, fmt.Sprintf("%s.url %q is not an http(s) URL", at, w.URL),
				"write the webhook's URL, e.g. https://hooks.slack.com/services/..., or ${SLACK_WEBHOOK_URL} to read it from the environment")
		}
		if w.Format != "" && !contains(WebhookFormats, w.Format) && !d.reportedAt(d.positions[at+".format"]) {
			hint := "use one of " + strings.Join(WebhookFormats, ", ")
			if near := triggers.Closest(w.Format, WebhookFormats); near != "" {
				hint = fmt.Sprintf("did you mean %q? (one of %s)", near, strings.Join(WebhookFormats, ", "))
			}
			d.reportAt(d.positions[at+".format"], fmt.Sprintf("%s.format %q is not a webhook format", at, w.Format), hint)
		}
		for j, ev := range w.On {
			if !contains(HookEventNames, ev) && !d.reportedAt(d.positions[fmt.Sprintf("%s.on[%d]", at, j)]) {
				hint := "use some of " + strings.Join(HookEventNames, ", ")
				if near := triggers.Closest(ev, HookEventNames); near != "" {
					hint = fmt.Sprintf("did you mean %q? (of %s)", near, strings.Join(HookEventNames, ", "))
				}
				d.reportAt(d.positions[fmt.Sprintf("%s.on[%d]", at, j)], fmt.Sprintf("%s.on: %q is not an event", at, ev), hint)
			}
		}
	}
}

// checkBackend reports a backend: block that names no backend, or an
// address that is not HOST:PORT, a blank namespace or task queue, a
// heartbeat timeout of zero.
func checkBackend(d *decoder, b *Backend) {
	if b == nil {
		return
	}
	if b.Kind != "" && !contains(BackendKinds, b.Kind) {
		hint := "use one of " + strings.Join(BackendKinds, ", ")
		if near := triggers.Closest(b.Kind, BackendKinds); near != "" {
			hint = fmt.Sprintf("did you mean %q? (one of %s)", near, strings.Join(BackendKinds, ", "))
		}
		d.reportAt(d.positions["backend.kind"], fmt.Sprintf("backend.kind %q is not a backend", b.Kind), hint)
	}
	if d.has("backend.address") {
		if port, ok := splitPort(b.Address); !ok || port == "" || strings.TrimSpace(b.Address) != b.Address {
			d.reportAt(d.positions["backend.address"], fmt.Sprintf("backend.address %q is not HOST:PORT", b.Address),
				"write the Temporal frontend's address, e.g. 127.0.0.1:7233")
		}
	}
	for _, key := range []string{"namespace", "task_queue"} {
		value := b.Namespace
		if key == "task_queue" {
			value = b.TaskQueue
		}
		if d.has("backend."+key) && strings.TrimSpace(value) == "" && !d.reportedAt(d.positions["backend."+key]) {
			d.reportAt(d.positions["backend."+key], "backend."+key+" is empty", "remove it for the default, or name one")
		}
	}
	if b.HeartbeatTimeout != nil && *b.HeartbeatTimeout <= 0 && !d.reportedAt(d.positions["backend.heartbeat_timeout"]) {
		d.reportAt(d.positions["backend.heartbeat_timeout"], "backend.heartbeat_timeout must be more than zero",
			"a worker silent this long is taken for lost; 30s is the default")
	}
}

// checkCompactPrompt reports a compact_prompt written empty (or blank):
// absent, the built-in prompt is used; empty, the agent would be asked
// nothing and its answer, whatever it is, would seed the next session.
func checkCompactPrompt(d *decoder, prompt, path string) {
	if !d.has(path) || strings.TrimSpace(prompt) != "" || d.reportedAt(d.positions[path]) {
		return
	}
	d.reportAt(d.positions[path], path+" is empty",
		"write the prompt that asks the agent for its working set, or remove the key to use the built-in one")
}

// splitPort is net.SplitHostPort's reading of HOST:PORT, without the
// net package: the spec is parsed inside workflow code, which must link
// nothing that reaches the network. ok is false where SplitHostPort
// returns an error.
func splitPort(address string) (port string, ok bool) {
	colon := strings.LastIndexByte(address, ':')
	if colon < 0 {
		return "", false
	}
	hostFrom, portFrom := 0, 0
	if address[0] == '[' {
		end := strings.IndexByte(address, ']')
		if end < 0 || end+1 != colon {
			return "", false
		}
		hostFrom, portFrom = 1, end+1
	} else if strings.IndexByte(address[:colon], ':') >= 0 {
		return "", false
	}
	if strings.IndexByte(address[hostFrom:], '[') >= 0 || strings.IndexByte(address[portFrom:], ']') >= 0 {
		return "", false
	}
	return address[colon+1:], true
}

func (d *decoder) reportedAt(pos Position) bool {
	return d.reported[pos]
}

func (d *decoder) has(path string) bool {
	_, ok := d.positions[path]
	return ok
}

func checkAgent(d *decoder, a *Agent, path string) {
	if a == nil {
		return
	}
	if a.Kind != "" && !contains(AgentKinds, a.Kind) {
		hint := "use one of " + strings.Join(AgentKinds, ", ")
		if near := triggers.Closest(a.Kind, AgentKinds); near != "" {
			hint = fmt.Sprintf("did you mean %q? (one of %s)", near, strings.Join(AgentKinds, ", "))
		}
		d.reportAt(d.positions[path+".kind"], fmt.Sprintf("%s.kind %q is not an agent kind", path, a.Kind), hint)
	}
	if a.Kind != "" && a.Kind != KindCommand && len(a.Command) > 0 {
		d.reportAt(d.positions[path+".command#key"], fmt.Sprintf("%s.command is only for kind: command (this agent is %s)", path, a.Kind),
			"pass extra arguments with args, or use kind: command to run your own program")
	}
	if a.Kind == KindCommand && len(a.Command) == 0 && d.has(path+".kind") && (path == "agent" || path == "pipeline.agent") {
		d.brokenAgents[d.positions[path]] = true
		d.reportAt(d.positions[path+".kind"], fmt.Sprintf("%s has kind: command but no command", path),
			`add command: [./bin/my-agent, "{prompt}"]; an argument containing {prompt} gets the prompt, otherwise it goes to standard input`)
	}
	if d.has(path+".command") && len(a.Command) > 0 && strings.TrimSpace(a.Command[0]) == "" {
		d.reportAt(d.positions[path+".command"], fmt.Sprintf("%s.command starts with an empty program name", path), "")
	}
	if len(a.Command) > 0 && (a.Kind == "" || a.Kind == KindCommand) {
		d.program(a.Command[0], d.positions[path+".command[0]"], path+".command")
	}
}

func checkPhases(d *decoder, phases []Phase, path string) {
	seen := map[string]int{}
	for i, phase := range phases {
		at := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case phase.Name == "" && !d.has(at+".name"):
			if d.reportedAt(d.positions[at]) {
				break // a misspelt name key, already reported
			}
			d.reportAt(d.positions[at], fmt.Sprintf("%s has no name", at), "add name: design (or another word) to the phase")
		case !validName(phase.Name):
			d.reportAt(d.positions[at+".name"], fmt.Sprintf("phase name %q is not a plain name", phase.Name),
				"use letters, digits, -, _ and .; the name is used in file names and in expressions")
		default:
			if first, dup := seen[phase.Name]; dup {
				d.reportAt(d.positions[at+".name"], fmt.Sprintf("phase %q is defined twice (first as %s[%d])", phase.Name, path, first),
					"give each phase its own name")
			} else {
				seen[phase.Name] = i
			}
		}
		checkAgent(d, phase.Agent, at+".agent")
		checkSteps(d, phase, at)
	}
}

// defaultStepName is the name a step gets when it has none.
func defaultStepName(s Step) string {
	if s.Run != "" || s.Agent == nil {
		return "run"
	}
	return "agent"
}

func checkSteps(d *decoder, phase Phase, at string) {
	seen := map[string]bool{}
	for i, step := range phase.Steps {
		sp := fmt.Sprintf("%s.steps[%d]", at, i)
		hasRun, hasAgent := d.has(sp+".run"), d.has(sp+".agent")
		switch {
		case hasRun && hasAgent:
			d.reportAt(d.positions[sp+".run#key"], fmt.Sprintf("%s has both run and agent", sp),
				"a step is either an agent step (agent: {}) or a shell step (run: ...); split it in two")
		case !hasRun && !hasAgent:
			d.reportAt(d.positions[sp], fmt.Sprintf("%s has neither run nor agent", sp),
				"add agent: {} for an agent step with the phase prompt, or run: <shell command>")
		case hasRun && strings.TrimSpace(step.Run) == "" && !d.reportedAt(d.positions[sp+".run"]):
			d.reportAt(d.positions[sp+".run"], fmt.Sprintf("%s.run is empty", sp), "write the shell command to run, e.g. go test ./...")
		case hasRun:
			d.shellProgram(step.Run, d.positions[sp+".run"], sp+".run")
		}
		if hasRun && step.Prompt != "" {
			d.reportAt(d.positions[sp+".prompt#key"], fmt.Sprintf("%s.prompt is only for agent steps", sp), "remove it, or make the step an agent step")
		}
		checkAgent(d, step.Agent, sp+".agent")
		name := step.Name
		if name == "" {
			name = defaultStepName(step)
		} else if !validName(name) {
			d.reportAt(d.positions[sp+".name"], fmt.Sprintf("step name %q is not a plain name", name),
				"use letters, digits, -, _ and .")
			continue
		}
		if seen[name] {
			where := d.positions[sp+".name"]
			if step.Name == "" {
				where = d.positions[sp]
			}
			d.reportAt(where, fmt.Sprintf("two steps of phase %q are named %q", phase.Name, name),
				"give each step its own name: with name: ...")
		}
		seen[name] = true
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
