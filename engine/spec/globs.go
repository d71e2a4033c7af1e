package spec

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/goccy/go-yaml/ast"
)

// checkGlobs reports the watch globs the watcher could not use, and those
// that reach out of the folder of phases.yaml. The watch is about the
// project's own files: a glob that names an absolute place, or climbs out
// with .., would resume sessions on changes to another checkout or a home
// folder, and would read differently on every machine the project is
// checked out on.
//
// node is the list as written and globs what decode read of it, item for
// item; an item that is not text was reported by decode already.
func (d *decoder) checkGlobs(node ast.Node, globs []string, at string) {
	seq, ok := d.resolve(node).(*ast.SequenceNode)
	if !ok {
		return
	}
	for i, glob := range globs[:min(len(globs), len(seq.Values))] {
		item := d.resolve(seq.Values[i])
		if item == nil || !isNull(item) && !isScalar(item) {
			continue // an alias to nothing, or not text: reported already
		}
		pos := d.positions[fmt.Sprintf("%s[%d]", at, i)]
		switch {
		case !isNull(item):
			pos = d.nodePosition(item) // the text, also when an alias names it
		case i < len(seq.Entries) && seq.Entries[i].Start != nil:
			pos = d.position(seq.Entries[i].Start) // an item with no value: its dash
		}
		if d.reportedAt(pos) {
			continue
		}
		if message, hint := globProblem(glob, at[strings.LastIndexByte(at, '.')+1:]); message != "" {
			d.reportAt(pos, fmt.Sprintf("%s[%d]%s", at, i, message), hint)
		}
	}
}

// globProblem says what is wrong with a glob of the key (watch, writes),
// as the end of a message that starts with its path; "" when nothing is.
func globProblem(glob, key string) (message, hint string) {
	w := watchWording
	if key == "writes" {
		w = writesWording
	}
	slashed := filepath.ToSlash(glob)
	switch {
	case strings.TrimSpace(glob) == "":
		return " is empty", w.empty
	case strings.HasPrefix(slashed, "/") || filepath.IsAbs(glob) || hasDriveLetter(slashed):
		return fmt.Sprintf(": %q is an absolute path; %s globs are relative to the folder of phases.yaml", glob, key), w.absolute
	case climbsOut(slashed):
		return fmt.Sprintf(": %q uses ..; %s globs stay inside the folder of phases.yaml", glob, key), w.climbs
	case !doublestar.ValidatePattern(slashed):
		return fmt.Sprintf(": %q is not a valid glob", glob),
			`close every [ and {, and end no glob with a lone \; ** matches any number of folders, * any characters but /`
	}
	return "", ""
}

// globWording is what to do about a bad glob of one key.
type globWording struct{ empty, absolute, climbs string }

var (
	watchWording = globWording{
		empty:    "write a glob relative to the folder of phases.yaml, such as specs/**/*.md, or remove the item",
		absolute: "write it from the folder of phases.yaml, such as specs/**/*.md: pipeline watches the project's own files only",
		climbs:   "pipeline watches the project's own files only: write the glob from the folder of phases.yaml without .., or move phases.yaml up to a folder that holds the files",
	}
	writesWording = globWording{
		empty:    "write a glob relative to the folder of phases.yaml, such as docs/**, or remove the item; writes: [] makes the phase read-only",
		absolute: "write it from the folder of phases.yaml, such as docs/**: the scope is checked against the project's own files",
		climbs:   "the scope is checked against the files under the folder of phases.yaml: write the glob from there without ..",
	}
)

// hasDriveLetter reports a Windows absolute path such as C:/specs, on any
// system: the same phases.yaml is read on all of them.
func hasDriveLetter(slashed string) bool {
	if len(slashed) < 2 || slashed[1] != ':' {
		return false
	}
	c := slashed[0]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// climbsOut reports a glob that still names .. once cleaned: one that
// starts above its folder, or offers .. among the choices of a {a,b}.
func climbsOut(slashed string) bool {
	parts := strings.FieldsFunc(path.Clean(slashed), func(r rune) bool {
		return r == '/' || r == '{' || r == '}' || r == ','
	})
	for _, part := range parts {
		if part == ".." {
			return true
		}
	}
	return false
}

// isScalar reports a node that decode reads as text.
func isScalar(node ast.Node) bool {
	switch node.(type) {
	case *ast.StringNode, *ast.LiteralNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return true
	}
	return false
}
