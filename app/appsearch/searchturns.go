package appsearch

import (
	"bufio"
	"os"
	"slices"
	"syscall"

	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// placeBudget bounds the bytes of transcripts placeInTurns reads for one
// search: rendering runs at about 30 MB/s, and a search must stay quick;
// hits past it keep no turn.
const placeBudget = 8 << 20

// placeInTurns names the turn and the tool call of each transcript hit:
// each transcript with hits is rendered once, up to its last hit's line,
// the lines that say nothing skipped (transcript.Silent), within
// placeBudget, unless the places kept of it from an earlier search reach
// that line. A transcript that cannot be read leaves its hits as they
// are.
func placeInTurns(st *store.Store, hits []Hit) {
	byFile := map[[2]string][]*Hit{}
	for i := range hits {
		if h := &hits[i]; h.Kind == search.KindTranscript && h.Line > 0 {
			key := [2]string{h.Session, h.File}
			byFile[key] = append(byFile[key], h)
		}
	}
	budget := int64(placeBudget)
	for i := range hits {
		h := &hits[i]
		in := byFile[[2]string{h.Session, h.File}]
		if len(in) == 0 || budget <= 0 {
			continue
		}
		delete(byFile, [2]string{h.Session, h.File})
		slices.SortFunc(in, func(a, b *Hit) int { return a.Line - b.Line })
		budget -= placeInFile(st, h.Session, h.File, in, budget)
	}
}

// placeInFile places hits, sorted by line, in one transcript: from the
// places kept of it (search.LoadPlaces) when they reach the last hit,
// else by rendering it, reading at most budget bytes, and keeping what
// that found. It returns the bytes it read.
func placeInFile(st *store.Store, session, rel string, hits []*Hit, budget int64) (read int64) {
	f, err := st.OpenSessionFile(session, rel)
	if err != nil {
		return 0
	}
	defer f.Close()
	if kept, ok := search.LoadPlaces(st, session, rel, f); ok && kept.Lines >= hits[len(hits)-1].Line {
		for _, h := range hits {
			h.Turn, h.Call, h.Tool = kept.At(h.Line)
		}
		return 0
	}
	found, read := renderPlaces(f, hits, budget)
	if sys, ok := statOf(f); ok && found.Lines > 0 {
		found.Inode = sys
		search.SavePlaces(st, session, rel, found)
	}
	return read
}

// renderPlaces renders a transcript up to the last hit's line, within
// budget bytes, and places the hits; it returns the places of the whole
// lines it rendered.
func renderPlaces(f *os.File, hits []*Hit, budget int64) (found search.Places, read int64) {
	r := transcript.New(transcript.Detect, "")
	lines := bufio.NewReaderSize(f, 64<<10)
	var turn int
	for n := 1; len(hits) > 0 && read < budget; n++ {
		line, err := lines.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return found, read
		}
		read += int64(len(line))
		call, tool, was := 0, "", turn
		if transcript.Silent(line) {
			line = nil
		}
		for _, it := range r.Line(line) {
			turn = max(turn, it.Turn)
			if it.Kind == transcript.ToolCall || it.Kind == transcript.ToolResult {
				call, tool = it.Call, it.Tool
			}
		}
		for len(hits) > 0 && hits[0].Line == n {
			hits[0].Turn, hits[0].Call, hits[0].Tool = turn, call, tool
			hits = hits[1:]
		}
		if err != nil {
			// A last line without its break may be being written: its
			// place is not kept.
			return found, read
		}
		if turn != was || call != 0 || tool != "" {
			found.Points = append(found.Points, search.Place{Line: n, Turn: turn, Call: call, Tool: tool})
		}
		found.Lines, found.Bytes = n, read
	}
	return found, read
}

// statOf is the inode of an open file.
func statOf(f *os.File) (uint64, bool) {
	info, err := f.Stat()
	if err != nil {
		return 0, false
	}
	sys, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return sys.Ino, true
}
