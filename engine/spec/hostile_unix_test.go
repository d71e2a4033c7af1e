//go:build unix

package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pipeline-dev/pipeline/engine/spec"
)

// A phases.yaml that never ends (here /dev/zero) was read whole before
// its size was checked: it ran out of memory. Only its first 256 KiB are
// read.
func TestIssue9EndlessPhasesFileIsRefusedUnread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "phases.yaml")
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	var err error
	withinBudget(t, "an endless phases.yaml", inputAllocLimit, inputHangLimit, func() { _, err = spec.LoadFile(path) })
	var specErr *spec.Error
	if !errors.As(err, &specErr) || len(specErr.Problems) != 1 {
		t.Fatalf("LoadFile gave %v, want one problem", err)
	}
	if p := specErr.Problems[0]; p.Line != 1 || p.Column != 1 || p.Message != "the file is over 256 KiB; pipeline reads at most 256 KiB of YAML" {
		t.Errorf("problem at %d:%d: %q", p.Line, p.Column, p.Message)
	}
}

// A spec is read as far as its frontmatter: its body may be endless (a
// pipe here, written until the reader goes), and an unclosed frontmatter
// is refused after 256 KiB.
func TestIssue9SpecIsReadAsFarAsItsFrontmatter(t *testing.T) {
	for name, tc := range map[string]struct {
		head, body, want string
	}{
		"endless body":                 {"---\nstatus: draft\n---\n", "# Title\n", ""},
		"endless unclosed frontmatter": {"---\n", "k: v\n", "the frontmatter opened here is not closed within its first 256 KiB"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "spec.md")
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			written := make(chan error, 1)
			go func() {
				w, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					written <- err
					return
				}
				defer w.Close()
				body := []byte(strings.Repeat(tc.body, 8192))
				_, err = w.Write([]byte(tc.head))
				for err == nil {
					_, err = w.Write(body)
				}
				written <- nil // the reader closed the pipe
			}()
			var fm *spec.Frontmatter
			var err error
			withinBudget(t, name, inputAllocLimit, inputHangLimit, func() { fm, err = spec.LoadSpec(path) })
			if werr := <-written; werr != nil {
				t.Fatal(werr)
			}
			if tc.want == "" {
				if err != nil || fm.Values["status"] != "draft" {
					t.Errorf("LoadSpec gave %v, %v; want status draft", fm.Values, err)
				}
				return
			}
			var specErr *spec.Error
			if !errors.As(err, &specErr) || specErr.Problems[0].Message != tc.want || specErr.Problems[0].Line != 1 {
				t.Errorf("LoadSpec gave %v, want %q at line 1", err, tc.want)
			}
		})
	}
}
