package spec

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// A program named by a path in phases.yaml or a spec (a kind: command
// agent's command: [./bin/my-agent, ...], the first word of a run: step
// or of a hook, ./scripts/check.sh) that is not there when the pipeline is
// loaded is a warning, not an error: an earlier phase may build it (make
// in the implementation phase, the test script the agent writes). Where
// it was written, with what to do, is told at validate, plan and run
// rather than found when the step fails.

// programRef is a program named by a path, where it was written.
type programRef struct {
	path string
	at   Position
	// what names the value: agent.command, phases[1].steps[0].run.
	what string
	// source and caret are the snippet of the line it is written on (see
	// Problem), filled in by programRefs.
	source string
	caret  int
}

// program records command[0] of an agent when it is a path: a name alone
// is looked for on PATH, which pipeline doctor checks.
func (d *decoder) program(path string, at Position, what string) {
	if !strings.ContainsRune(path, '/') || strings.ContainsAny(path, "{}$") {
		return
	}
	d.programs = append(d.programs, programRef{path: path, at: at, what: what})
}

// shellMeta are the characters that make a shell line's first word
// something else than a path to a program.
const shellMeta = "$`'\"\\*?[]{}~;|&<>()=#!"

// shellProgram records the first word of a shell line when it is a path
// to a program (./check.sh, ../bin/x, /opt/tool): plainly written, with
// nothing a shell would expand in it.
func (d *decoder) shellProgram(line string, at Position, what string) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return
	}
	word := fields[0]
	if !(strings.HasPrefix(word, "./") || strings.HasPrefix(word, "../") || strings.HasPrefix(word, "/")) ||
		strings.ContainsAny(word, shellMeta) {
		return
	}
	// The caret on the word: after a quote and the spaces before it.
	if r, ok := d.runeAt(at); ok && (r == '"' || r == '\'') {
		at = d.next(at)
	}
	d.programs = append(d.programs, programRef{path: word, at: d.skipSpace(at), what: what})
}

// programRefs are the programs phases.yaml and the spec name by a path,
// in the order they are written, each once, with its snippet.
func programRefs(doc *Document, fm *Frontmatter) []programRef {
	refs := slices.Clone(doc.dec.programs)
	slices.SortStableFunc(refs, func(a, b programRef) int { return cmp.Or(a.at.Line-b.at.Line, a.at.Column-b.at.Column) })
	if fm != nil {
		refs = append(refs, fm.dec.programs...)
	}
	seen := map[Position]bool{}
	out := refs[:0]
	for _, ref := range refs {
		if seen[ref.at] {
			continue
		}
		seen[ref.at] = true
		if d := decoderFor(doc, fm, ref.at.File); d != nil {
			ref.source, ref.caret = snippet(d.sourceLine(ref.at.Line), ref.at.Column)
		}
		out = append(out, ref)
	}
	return out
}

// checkPrograms warns of each program of refs that is not there, is a
// folder, or cannot be run, from the folder of phases.yaml (file), where
// steps and hooks run. It looks at the file system at each load: a
// cached plan keeps refs, not their warnings.
func checkPrograms(refs []programRef, file, base string) []Problem {
	dir := filepath.Dir(file)
	var warnings []Problem
	for _, ref := range refs {
		abs := filepath.FromSlash(ref.path)
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(dir, abs)
		}
		abs = absolute(base, abs)
		var problem, hint string
		info, err := os.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist) || isNotDir(err):
			problem = "does not exist"
			hint = "fix the path (a relative one is from the folder of phases.yaml, where steps and hooks run), or make the program before it runs; if an earlier phase builds it, this warning is expected"
		case err != nil:
			continue // cannot be looked at: the run will say
		case info.IsDir():
			problem = "is a folder, not a program"
			hint = "name the program in it"
		case info.Mode().Perm()&0o111 == 0:
			problem = "cannot be run: it is not executable"
			hint = fmt.Sprintf("chmod +x %s", ref.path)
		default:
			continue
		}
		warnings = append(warnings, Problem{Position: ref.at, Message: fmt.Sprintf("%s: %s %s (%s)", ref.what, ref.path, problem, abs),
			Hint: hint, Source: ref.source, caret: ref.caret})
	}
	return warnings
}

// decoderFor is the decoder of the file named file: phases.yaml's or the
// spec's.
func decoderFor(doc *Document, fm *Frontmatter, file string) *decoder {
	if fm != nil && fm.dec.file == file {
		return fm.dec
	}
	if doc.dec.file == file {
		return doc.dec
	}
	return nil
}

// isNotDir is a path with a file where a folder should be on the way
// (./script.sh/x): not there either.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
