package app

import (
	"bufio"
	"slices"

	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/transcript"
)

// placeInTurns names the turn and the tool call of each transcript hit:
// each transcript with hits is rendered once, up to its last hit's line.
// A transcript that cannot be read leaves its hits as they are.
func placeInTurns(st *store.Store, hits []Hit) {
	byFile := map[[2]string][]*Hit{}
	for i := range hits {
		if h := &hits[i]; h.Kind == search.KindTranscript && h.Line > 0 {
			key := [2]string{h.Session, h.File}
			byFile[key] = append(byFile[key], h)
		}
	}
	for key, in := range byFile {
		slices.SortFunc(in, func(a, b *Hit) int { return a.Line - b.Line })
		placeInFile(st, key[0], key[1], in)
	}
}

func placeInFile(st *store.Store, session, rel string, hits []*Hit) {
	f, err := st.OpenSessionFile(session, rel)
	if err != nil {
		return
	}
	defer f.Close()
	r := transcript.New(transcript.Detect, "")
	lines := bufio.NewReaderSize(f, 64<<10)
	var turn int
	for n := 1; len(hits) > 0; n++ {
		line, err := lines.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return
		}
		call, tool := 0, ""
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
			return
		}
	}
}
