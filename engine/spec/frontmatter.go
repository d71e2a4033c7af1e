package spec

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/goccy/go-yaml/ast"

	"github.com/pipeline-dev/pipeline/triggers"
)

// Frontmatter is the YAML block at the top of a spec file: LeanSpec's keys
// (status, priority, created, tags, depends_on, transitions, ...) and any
// other, plus the two ways a spec overrides its pipeline.
type Frontmatter struct {
	Path string
	// Values holds every key, reachable as spec.<key> in expressions.
	Values map[string]any
	// AgentPhases is LeanSpec's shape: a list of {phase: prompt}; it
	// replaces the pipeline's phase list.
	AgentPhases []AgentPhase
	// Pipeline is a full override block: agent, defaults and phases.
	Pipeline *Overrides
	dec      *decoder
	// block is the frontmatter as written, for the plan's digest.
	block []byte
}

// AgentPhase is one entry of agent_phases.
type AgentPhase struct {
	Name   string
	Prompt string
	index  int
}

// Overrides is the pipeline: block of a spec's frontmatter.
type Overrides struct {
	Agent    *Agent  `yaml:"agent" json:"agent,omitempty" jsonschema_description:"agent for this spec, over phases.yaml's"`
	Defaults *Policy `yaml:"defaults" json:"defaults,omitempty" jsonschema_description:"triggers and policies for this spec, over phases.yaml's defaults"`
	Phases   []Phase `yaml:"phases" json:"phases,omitempty" jsonschema_description:"phases for this spec; they replace phases.yaml's list, and one named like a phase of phases.yaml amends it"`
	On       *Hooks  `yaml:"on" json:"on,omitempty" jsonschema_description:"hooks for this spec; an event set here replaces phases.yaml's commands for it"`
	Notify   *Notify `yaml:"notify" json:"notify,omitempty" jsonschema_description:"notifications for this spec; they replace phases.yaml's notify: block"`
	// CompactPrompt is "" when not written, as in Pipeline.
	CompactPrompt string `yaml:"compact_prompt" json:"compact_prompt,omitempty" jsonschema:"pattern=\\S" jsonschema_description:"the compaction prompt for this spec, over phases.yaml's compact_prompt"`
	// SpecStatus, false, keeps the sessions from writing this spec's
	// status, over phases.yaml's spec_status.
	SpecStatus *bool `yaml:"spec_status" json:"spec_status,omitempty" jsonschema_description:"whether a session moves this spec's LeanSpec status (planned, in-progress, complete), over phases.yaml's spec_status"`
	// Template names the template the spec was written for: pipeline
	// init --spec uses its phases.yaml, and a run with no phases.yaml
	// beside the spec names it in its error.
	Template string `yaml:"template" json:"template,omitempty" jsonschema:"pattern=^[A-Za-z0-9][A-Za-z0-9._-]*$" jsonschema_description:"the template this spec is written for (pipeline templates lists them): pipeline init --spec SPEC writes that template's phases.yaml"`
}

// LoadSpec reads a spec file and its frontmatter.
func LoadSpec(path string) (*Frontmatter, error) {
	// The frontmatter is all that is read of a spec: its body may be of
	// any length.
	content, size, err := readHead(path, maxYAMLBytes+frontmatterSlack)
	if err != nil {
		return nil, err
	}
	if size < 0 || int64(len(content)) < size {
		if _, found, closed := frontmatterBlock(content); found && !closed {
			fm := &Frontmatter{Path: path, Values: map[string]any{}, dec: newDecoder(path, content, 1)}
			fm.dec.reportAt(Position{File: path, Line: 1, Column: 1},
				fmt.Sprintf("the frontmatter opened here is not closed within its first %d KiB", maxYAMLBytes>>10),
				"end the YAML block with a line holding only ---; pipeline reads at most 256 KiB of frontmatter")
			return fm, fm.dec.problems.err()
		}
	}
	return ParseSpec(path, content)
}

// frontmatterSlack is room for the lines that open and close a frontmatter
// block of maxYAMLBytes.
const frontmatterSlack = 64

// ParseSpec reads the frontmatter of spec content. A spec without
// frontmatter is valid and has no values. With problems, the partly decoded
// frontmatter comes back with the *Error.
func ParseSpec(path string, content []byte) (*Frontmatter, error) {
	fm := &Frontmatter{Path: path, Values: map[string]any{}}
	dec := newDecoder(path, content, 1)
	fm.dec = dec
	block, found, closed := frontmatterBlock(content)
	fm.block = block
	if !found {
		return fm, nil
	}
	if !closed {
		dec.reportAt(Position{File: path, Line: 1, Column: 1}, "the frontmatter opened here is never closed",
			"end the YAML block with a line holding only ---")
		return fm, dec.problems.err()
	}
	root := dec.parse(block, "the frontmatter")
	if root != nil {
		if guard(func() { fm.decode(dec.resolve(root)) }) {
			// Half of a bomb is no override: merge none of it.
			fm.Values, fm.AgentPhases, fm.Pipeline = map[string]any{}, nil, nil
		}
	}
	return fm, dec.problems.err()
}

// FrontmatterBlock is the YAML of a spec's frontmatter, nil when it has
// none (or it is not closed).
func FrontmatterBlock(content []byte) []byte {
	block, _, _ := frontmatterBlock(content)
	return block
}

// frontmatterBlock finds the YAML between a first line of --- and the next
// line of --- (or ...).
func frontmatterBlock(content []byte) (block []byte, found, closed bool) {
	content = bytes.TrimPrefix(content, []byte(byteOrderMark))
	first, rest, _ := bytes.Cut(content, []byte("\n"))
	if string(bytes.TrimRight(first, " \t\r")) != "---" {
		return nil, false, false
	}
	offset := 0
	for len(rest[offset:]) > 0 {
		line, _, _ := bytes.Cut(rest[offset:], []byte("\n"))
		trimmed := string(bytes.TrimRight(line, " \t\r"))
		if trimmed == "---" || trimmed == "..." {
			return rest[:offset], true, true
		}
		offset += len(line) + 1
		if offset > len(rest) {
			break
		}
	}
	return nil, true, false
}

func (fm *Frontmatter) decode(root ast.Node) {
	d := fm.dec
	if isNull(root) {
		return
	}
	entries, ok := d.mappingEntries(root, "the frontmatter")
	if !ok {
		return
	}
	for _, e := range entries {
		key := keyText(e)
		d.positions[key+"#key"] = d.position(e.Key.GetToken())
		switch key {
		case "agent_phases":
			fm.decodeAgentPhases(e.Value)
		case "pipeline":
			fm.Pipeline = &Overrides{}
			d.decode(e.Value, reflect.ValueOf(fm.Pipeline).Elem(), "pipeline", triggers.Condition)
			checkAgent(d, fm.Pipeline.Agent, "pipeline.agent")
			checkCompactPrompt(d, fm.Pipeline.CompactPrompt, "pipeline.compact_prompt")
			checkNotify(d, fm.Pipeline.Notify, "pipeline.notify")
			checkPhases(d, fm.Pipeline.Phases, "pipeline.phases")
		default:
			fm.Values[key] = d.plainValue(e.Value, 0)
		}
	}
	if fm.AgentPhases != nil && fm.Pipeline != nil && fm.Pipeline.Phases != nil {
		d.reportAt(d.positions["pipeline.phases#key"], "both agent_phases and pipeline.phases give the phases",
			"keep one: agent_phases for prompts only, pipeline.phases for full phases")
	}
}

// plainValue turns a node into maps, lists and scalars for spec.<key>,
// following anchors and aliases as the rest of the decoder does.
func (d *decoder) plainValue(node ast.Node, depth int) any {
	node = d.resolve(node)
	if node == nil {
		return nil
	}
	if depth > 64 {
		d.reportNode(node, "the frontmatter is nested too deeply", "")
		return nil
	}
	switch n := node.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		entries, _ := d.mappingEntries(n, "the frontmatter")
		out := make(map[string]any, len(entries))
		for _, e := range entries {
			out[keyText(e)] = d.plainValue(e.Value, depth+1)
		}
		return out
	case *ast.SequenceNode:
		out := make([]any, len(n.Values))
		for i, item := range n.Values {
			out[i] = d.plainValue(item, depth+1)
		}
		return out
	case *ast.StringNode:
		return n.Value
	case *ast.LiteralNode:
		return n.Value.Value
	case *ast.IntegerNode:
		if i, ok := n.Value.(int64); ok {
			return int(i)
		}
		return n.Value
	case *ast.FloatNode:
		return n.Value
	case *ast.BoolNode:
		return n.Value
	case *ast.InfinityNode:
		return n.Value
	case *ast.NanNode:
		return n.GetToken().Value
	}
	return nil
}

func (fm *Frontmatter) decodeAgentPhases(node ast.Node) {
	d := fm.dec
	d.positions["agent_phases"] = d.nodePosition(node)
	node = d.resolve(node)
	if isNull(node) {
		return
	}
	seq, ok := node.(*ast.SequenceNode)
	if !ok {
		d.reportNode(node, "agent_phases must be a list, not "+describe(node),
			`write one line per phase: - design: "Focus on the API"`)
		return
	}
	fm.AgentPhases = []AgentPhase{}
	seen := map[string]bool{}
	for i, item := range d.listItems(seq, "agent_phases") {
		path := fmt.Sprintf("agent_phases[%d]", i)
		d.positions[path] = d.nodePosition(item)
		item = d.resolve(item)
		var phase AgentPhase
		switch n := item.(type) {
		case nil:
			continue
		case *ast.StringNode:
			phase.Name = n.Value
		default:
			entries, ok := d.mappingEntries(item, path)
			if !ok {
				continue
			}
			if len(entries) != 1 {
				d.reportNode(item, fmt.Sprintf("%s must name one phase, not %d", path, len(entries)),
					`write one phase per list item: - design: "Focus on the API"`)
				continue
			}
			phase.Name = keyText(entries[0])
			d.positions[path] = d.position(entries[0].Key.GetToken())
			if value := d.resolve(entries[0].Value); !isNull(value) {
				if phase.Prompt, ok = d.scalar(value, path+"."+phase.Name, "a prompt (text)"); !ok {
					continue
				}
				d.positions[path+".prompt"] = d.position(value.GetToken())
			}
		}
		phase.index = i
		switch {
		case !validName(phase.Name):
			d.reportAt(d.positions[path], fmt.Sprintf("phase name %q in agent_phases is not a plain name", phase.Name),
				"use letters, digits, -, _ and .")
		case seen[phase.Name]:
			d.reportAt(d.positions[path], fmt.Sprintf("phase %q appears twice in agent_phases", phase.Name), "")
		}
		seen[phase.Name] = true
		fm.AgentPhases = append(fm.AgentPhases, phase)
	}
	if len(seq.Values) == 0 {
		d.reportNode(seq, "agent_phases is empty", "list at least one phase, or remove agent_phases")
	}
}

func (fm *Frontmatter) origin(path string) Origin {
	return Origin{Layer: LayerSpec, Position: fm.dec.positions[path]}
}
