package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/store"
)

func (s *Server) logs(ctx context.Context, _ *mcp.CallToolRequest, in LogsInput) (*mcp.CallToolResult, LogsOutput, error) {
	var out LogsOutput
	p, id, err := s.target(in.Target)
	if err != nil {
		return nil, out, err
	}
	r, err := app.Tail(ctx, app.TailRequest{Pipeline: p, Session: id, Phase: in.Phase, Attempt: in.Attempt, Lines: in.Lines, Bytes: in.Bytes, Raw: in.Raw})
	if err != nil {
		return nil, out, toolError(err, "")
	}
	out.Session, out.Truncated = r.Session, r.Truncated
	out.Transcripts = []TranscriptTail{}
	for _, t := range r.Transcripts {
		out.Transcripts = append(out.Transcripts, TranscriptTail{TranscriptTail: t, Resource: sessionURI(r.Session) + "/" + t.Rel})
	}
	return nil, out, nil
}

func transcriptURI(id string, f store.SessionFile) string {
	return sessionURI(id) + "/" + f.Rel
}
