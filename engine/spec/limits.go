package spec

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// The limits below keep a hostile or broken file from costing more than a
// few hundred milliseconds and a few tens of megabytes to refuse. Each is
// far above what a pipeline needs, and each refusal names the line.
const (
	// maxYAMLBytes is the largest phases.yaml or frontmatter block read:
	// the YAML parser's tree takes a few hundred bytes per byte of a dense
	// file.
	maxYAMLBytes = 256 << 10
	// maxNesting bounds how deeply collections nest. The YAML parser's
	// cost grows with the square of the depth, so the depth is measured on
	// the tokens, before the parser runs.
	maxNesting = 64
	// maxAliasValues and maxAliasBytes bound what aliases expand to in one
	// file: a few hundred bytes of aliases of aliases stand for billions of
	// values otherwise.
	maxAliasValues = 100_000
	maxAliasBytes  = 4 << 20
	// maxKeys bounds the keys of one block mapping, and maxPathBytes what
	// the parser spends on the paths of its nodes (see scanLimits).
	maxKeys      = 1000
	maxPathBytes = 32 << 20
	// maxListItems bounds a list of the model (phases, steps, args, ...),
	// and maxPlanValues the plan made of them: every phase gets its own
	// copy of the triggers it inherits, so phases × triggers is what a
	// plan costs.
	maxListItems  = 1000
	maxPlanValues = 100_000
)

// listItems returns the items of a list of the model, reporting those past
// maxListItems.
func (d *decoder) listItems(seq *ast.SequenceNode, path string) []ast.Node {
	if len(seq.Values) <= maxListItems {
		return seq.Values
	}
	d.reportNode(seq.Values[maxListItems], fmt.Sprintf("%s has %d items; pipeline reads at most %d", path, len(seq.Values), maxListItems),
		fmt.Sprintf("remove the items after the %dth", maxListItems))
	return seq.Values[:maxListItems]
}

// aborted is the panic that stops decoding a file whose aliases expand
// past the budget; Parse and ParseSpec recover it. Nothing else is worth
// reading in such a file, and going on would report the same aliases again.
type aborted struct{}

// guard runs decode and reports whether it was aborted.
func guard(decode func()) (stopped bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(aborted); !ok {
				panic(r)
			}
			stopped = true
		}
	}()
	decode()
	return false
}

// tooLarge reports a YAML text of size bytes (-1: more than can be told)
// over maxYAMLBytes; what names it.
func (d *decoder) tooLarge(size int64, what string) bool {
	if size >= 0 && size <= maxYAMLBytes {
		return false
	}
	length := fmt.Sprintf("is %d KiB", (size+1023)>>10)
	if size < 0 {
		length = fmt.Sprintf("is over %d KiB", maxYAMLBytes>>10)
	}
	d.reportAt(Position{File: d.file, Line: 1 + d.lineOffset, Column: 1},
		fmt.Sprintf("%s %s; pipeline reads at most %d KiB of YAML", what, length, maxYAMLBytes>>10),
		"keep the file to the pipeline's settings; put long prompts and notes in the spec's body, below its frontmatter")
	return true
}

// overLimit is the first place where a YAML text goes past what the
// parser can read cheaply.
type overLimit struct {
	at            *token.Token
	message, hint string
}

// openNode is a collection open at some point of the token stream: a
// block one (known by its column) or a flow one ([ or {).
type openNode struct {
	column int
	// keys counts the keys of a block mapping so far; pathBytes is what
	// the current key or index adds to the parser's path of every node
	// below it.
	keys, pathBytes int
}

// scanLimits reads the tokens for the shapes whose cost grows faster than
// the text in the YAML parser, before the parser runs:
//
//   - nesting: the parser's cost grows with the square of the depth. Flow
//     collections ([ and {) are counted exactly, block ones by their
//     indentation: a stack of the columns where nodes start (the first
//     token of a line, and what follows - or ?), from which a line pops
//     every column right of its own. A block collection nests only by
//     indenting further or by "- - x", so the real depth is at most about
//     twice the count; a conservative bound is all the parser needs.
//     Comments and the text of block scalars are single tokens and never
//     count.
//   - keys of one block mapping: the parser reads them recursively and
//     copies the rest of the mapping at each key.
//   - paths: the parser gives every node its path ($.phases[0].name) as a
//     new string, so long keys over many nodes cost their product.
func scanLimits(tokens token.Tokens) *overLimit {
	var block, flow []openNode
	line, pathBytes := 0, 0
	var prev *token.Token
	for i, tk := range tokens {
		if tk.Position == nil || tk.Type == token.CommentType {
			continue
		}
		if tk.Type == token.DocumentHeaderType || tk.Type == token.DocumentEndType {
			block, flow, line, prev = block[:0], flow[:0], tk.Position.Line, tk
			continue
		}
		isKey := tk.Type == token.MappingKeyType || nextType(tokens, i) == token.MappingValueType
		afterIndicator := prev != nil && (prev.Type == token.SequenceEntryType || prev.Type == token.MappingKeyType)
		blockText := prev != nil && (prev.Type == token.LiteralType || prev.Type == token.FoldedType)
		switch {
		case len(flow) > 0:
			if isKey {
				flow[len(flow)-1].pathBytes = len(tk.Value) + 3
			}
		case blockText:
		case tk.Type == token.MappingValueType, tk.Type == token.CollectEntryType,
			tk.Type == token.SequenceEndType, tk.Type == token.MappingEndType:
		case tk.Position.Line != line || afterIndicator || tk.Type == token.SequenceEntryType || tk.Type == token.MappingKeyType:
			column := tk.Position.Column
			for len(block) > 0 && block[len(block)-1].column > column {
				block = block[:len(block)-1]
			}
			if len(block) == 0 || block[len(block)-1].column != column {
				block = append(block, openNode{column: column})
			}
			top := &block[len(block)-1]
			switch {
			case tk.Type == token.SequenceEntryType:
				top.pathBytes = 12 // [index]
			case isKey:
				top.keys++
				top.pathBytes = len(tk.Value) + 3
				if top.keys > maxKeys {
					return &overLimit{tk, fmt.Sprintf("a mapping with more than %d keys", maxKeys),
						"split it, or make it a list; pipeline reads at most " + fmt.Sprint(maxKeys) + " keys in one mapping"}
				}
			}
		}
		switch tk.Type {
		case token.SequenceStartType:
			flow = append(flow, openNode{pathBytes: 12})
		case token.MappingStartType:
			flow = append(flow, openNode{})
		case token.SequenceEndType, token.MappingEndType:
			flow = flow[:max(len(flow)-1, 0)]
		}
		if len(block)+len(flow) > maxNesting {
			return &overLimit{tk, fmt.Sprintf("the YAML is nested more than %d levels deep here", maxNesting),
				"pipeline reads at most " + fmt.Sprint(maxNesting) + " levels of lists and mappings; close the brackets sooner or indent less"}
		}
		for _, n := range block {
			pathBytes += n.pathBytes
		}
		for _, n := range flow {
			pathBytes += n.pathBytes
		}
		if pathBytes > maxPathBytes {
			return &overLimit{tk, "the keys above this value are too long for the values below them",
				"shorten the keys; pipeline reads keys of a few words"}
		}
		line, prev = tk.Position.Line, tk
	}
	return nil
}

// nextType is the type of the first token after tokens[i] that is not a
// comment.
func nextType(tokens token.Tokens, i int) token.Type {
	for _, tk := range tokens[i+1:] {
		if tk.Type != token.CommentType {
			return tk.Type
		}
	}
	return token.UnknownType
}

// size is what a YAML node stands for once its aliases are expanded: its
// values (scalars and collections) and the bytes of its scalars.
type size struct {
	values, bytes int
}

func (s size) plus(o size) size {
	// Saturate well above the limits: a bomb's true size overflows an int.
	return size{values: min(s.values+o.values, 1<<40), bytes: min(s.bytes+o.bytes, 1<<50)}
}

// measure records the size of every anchored node of a document, in one
// pass in document order: an alias counts as the size of its anchor, known
// by then, so a chain of aliases of aliases costs one step per alias. An
// alias inside the value of its own anchor is marked recursive: expanding
// it would never end.
func (d *decoder) measure(node ast.Node, anchors map[string]size) size {
	switch n := node.(type) {
	case nil:
		return size{}
	case *ast.DocumentNode:
		return d.measure(n.Body, anchors)
	case *ast.MappingNode:
		total := size{values: 1}
		for _, v := range n.Values {
			total = total.plus(d.measure(v, anchors))
		}
		return total
	case *ast.MappingValueNode:
		return d.measure(n.Key, anchors).plus(d.measure(n.Value, anchors))
	case *ast.MappingKeyNode:
		return d.measure(n.Value, anchors)
	case *ast.SequenceNode:
		total := size{values: 1}
		for _, v := range n.Values {
			total = total.plus(d.measure(v, anchors))
		}
		return total
	case *ast.AnchorNode:
		name := n.Name.GetToken().Value
		d.measuring[name]++
		s := d.measure(n.Value, anchors)
		d.measuring[name]--
		anchors[name] = s
		d.sizes[n.Value] = s
		return s
	case *ast.AliasNode:
		name := n.Value.GetToken().Value
		if d.measuring[name] > 0 {
			d.recursive[n] = true
		}
		return anchors[name]
	case *ast.TagNode:
		return d.measure(n.Value, anchors)
	case *ast.LiteralNode:
		return size{values: 1, bytes: len(n.Value.Value)}
	}
	if tk := node.GetToken(); tk != nil {
		return size{values: 1, bytes: len(tk.Value)}
	}
	return size{values: 1}
}

// expand counts an alias against the file's budget; past it, the alias is
// reported and decoding stops. An alias counts once: met again while an
// alias of an anchor around it is expanded, it is part of that one's size.
func (d *decoder) expand(alias *ast.AliasNode, target ast.Node) {
	if d.counted[alias] {
		return
	}
	d.counted[alias] = true
	d.expanded = d.expanded.plus(d.sizes[target])
	over := ""
	switch {
	case d.expanded.values > maxAliasValues:
		over = fmt.Sprintf("more than %d values", maxAliasValues)
	case d.expanded.bytes > maxAliasBytes:
		over = fmt.Sprintf("more than %d MiB of text", maxAliasBytes>>20)
	default:
		return
	}
	d.report(alias.GetToken(), fmt.Sprintf("the aliases of this file, up to *%s here, expand to %s", alias.Value.GetToken().Value, over),
		"write the values out, or use fewer aliases of aliases; pipeline expands aliases as it reads them")
	panic(aborted{})
}
