package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/pipeline-dev/pipeline/internal/lazy"
)

// digest is the hex SHA-256 of what a plan is made from:
//
//   - the built-in defaults, so that a release that changes them names
//     another plan;
//   - phases.yaml, byte for byte;
//   - the spec's path, relative to phases.yaml's folder, and its
//     frontmatter, byte for byte.
//
// Bytes rather than the merged plan: the plan's encoding changes whenever a
// field is added, and two encodings of one plan must not differ. The cost is
// that a new comment in phases.yaml gives another digest, which errs on
// the safe side.
//
// The frontmatter rather than the whole spec file: the body is what the
// agent reads, not the plan, and a human edits it between a pause and a
// resume; that must not look like another plan. The spec's path is in
// because the plan names the spec the agent works on.
//
// Nothing absolute goes in: a session moves between machines and
// checkouts, so the folder of the checkout is left out, and line ends are
// read as \n so that a Windows checkout (CRLF) names the same plan.
func digest(doc *Document, fm *Frontmatter, base string) string {
	if fm == nil {
		return digestOf(doc.content, "", nil)
	}
	return digestOf(doc.content, relativePath(base, filepath.Dir(doc.Path), fm.Path), fm.block)
}

// digestOf is digest of phases.yaml's content and, when spec is not "",
// the spec's path relative to phases.yaml's folder and its frontmatter.
func digestOf(content []byte, spec string, frontmatter []byte) string {
	h := sha256.New()
	part := func(name string, content []byte) {
		// Each part is named and measured, so that no two different sets
		// of parts write the same bytes.
		fmt.Fprintf(h, "%s %d\n", name, len(content))
		h.Write(content)
	}
	part("pipeline plan digest", []byte("1"))
	part("built-in defaults", builtInDefaultsText.Get())
	part("phases.yaml", canonicalText(content))
	if spec != "" {
		part("spec", []byte(spec))
		part("frontmatter", canonicalText(frontmatter))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// redigester is Plan.redigest of a plan read from the cache: the digest
// with another frontmatter, from phases.yaml's content; nil without a
// spec, as Resolve leaves it.
func redigester(content []byte, file, spec, base string) func(block []byte) string {
	if spec == "" {
		return nil
	}
	rel := relativePath(base, filepath.Dir(file), spec)
	return func(block []byte) string { return digestOf(content, rel, block) }
}

// builtInDefaultsText is builtInDefaults, written once.
var builtInDefaultsText = lazy.Value[[]byte]{New: builtInDefaults}

// builtInDefaults writes the built-in values a plan starts from.
func builtInDefaults() []byte {
	out, err := json.Marshal(struct {
		Policy       Policy
		Prompt       string
		ResumeBudget int
	}{builtInPolicy.Get(), defaultPrompt, defaultResumeBudget})
	if err != nil {
		panic(fmt.Sprintf("spec: the built-in defaults do not encode: %v", err))
	}
	return out
}

// canonicalText drops a byte-order mark and reads CRLF line ends as LF.
func canonicalText(content []byte) []byte {
	content = bytes.TrimPrefix(content, []byte("\ufeff"))
	return bytes.ReplaceAll(content, []byte("\r\n"), []byte("\n"))
}

// relativePath writes path relative to dir (both relative to base, when
// not absolute) with forward slashes; when no relative path exists
// (another Windows volume), the file's name alone.
func relativePath(base, dir, path string) string {
	if rel, err := filepath.Rel(absolute(base, dir), absolute(base, path)); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(path)
}

// absolute is path made absolute against base, as filepath.Abs makes it
// against the working directory, without asking the system for it: the
// plan is made inside workflow code, which must make no system call.
func absolute(base, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(base, path)
}
