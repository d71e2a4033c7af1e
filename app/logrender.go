package app

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// logRenderer renders the transcripts Logs reads as conversations
// (internal/transcript): each file with its own renderer, a line at a
// time, so that a piece read mid-line waits for the rest of its line.
type logRenderer struct {
	plan    *spec.Plan
	options transcript.Options
	emit    func(LogChunk) error
	files   map[string]*renderedFile
	order   []string
}

type renderedFile struct {
	r       *transcript.Renderer
	partial []byte
}

func newLogRenderer(plan *spec.Plan, o transcript.Options, emit func(LogChunk) error) *logRenderer {
	return &logRenderer{plan: plan, options: o, emit: emit, files: map[string]*renderedFile{}}
}

// chunk renders the whole lines of c; a prompt passes as it is. With
// whole, c is the rest of its file: its last line too.
func (l *logRenderer) chunk(c LogChunk, whole bool) error {
	if c.Prompt {
		return l.emit(c)
	}
	f := l.files[c.File]
	if f == nil {
		f = &renderedFile{r: transcript.New(transcript.FormatIn(l.plan, c.File), planDir(l.plan))}
		l.files[c.File] = f
		l.order = append(l.order, c.File)
	}
	data := append(f.partial, c.Text...)
	end := bytes.LastIndexByte(data, '\n')
	f.partial = append([]byte(nil), data[end+1:]...)
	var items []transcript.Item
	for _, line := range bytes.SplitAfter(data[:end+1], []byte("\n")) {
		if len(line) > 0 {
			items = append(items, f.r.Line(line)...)
		}
	}
	if whole {
		items = append(items, l.end(f)...)
	}
	return l.send(c, items)
}

// end renders what f holds past its last line ending, and what a message
// cut short left.
func (l *logRenderer) end(f *renderedFile) []transcript.Item {
	var items []transcript.Item
	if len(f.partial) > 0 {
		items = f.r.Line(f.partial)
	}
	f.partial = nil
	return append(items, f.r.Flush()...)
}

// flush renders what each file holds past its last line ending, and what
// a message cut short left: the transcripts are read to their end.
func (l *logRenderer) flush() error {
	for _, name := range l.order {
		if err := l.send(LogChunk{File: name}, l.end(l.files[name])); err != nil {
			return err
		}
	}
	return nil
}

func (l *logRenderer) send(c LogChunk, items []transcript.Item) error {
	if len(items) == 0 && !c.First {
		return nil
	}
	var text strings.Builder
	transcript.WriteText(&text, items, l.options)
	c.Text, c.Items = []byte(text.String()), items
	return l.emit(c)
}

// renderer renders a transcript's text as a conversation; nil with raw.
func renderer(plan *spec.Plan, f store.SessionFile, raw bool) func([]byte) string {
	if raw {
		return nil
	}
	return func(data []byte) string {
		var b strings.Builder
		transcript.WriteText(&b, transcript.Render(data, transcript.FormatIn(plan, strings.TrimPrefix(f.Rel, "transcripts/")), planDir(plan)), transcript.Options{})
		return b.String()
	}
}

func planDir(plan *spec.Plan) string {
	if plan.File == "" {
		return ""
	}
	return filepath.Dir(plan.File)
}
