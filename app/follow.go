package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
)

// FollowRequest names the session whose running steps' output to follow:
// by id, or the latest of the pipeline and spec.
type FollowRequest struct {
	Pipeline
	Session string `json:"session,omitempty"`
	// Following, when set, is told once Follow knows where each
	// transcript ends now: what is printed after that reaches w.
	Following func() `json:"-"`
}

// Follow writes to w what the session's running steps print from now on
// (what they printed before is not repeated), until it stops running or
// ctx ends. It reads: no lock, nothing written.
func Follow(ctx context.Context, req FollowRequest, w io.Writer) error {
	f, err := req.FindSession(req.Session)
	if err != nil {
		return err
	}
	defer f.Store.Close()
	defer f.Close()
	r := &logReader{root: filepath.Join(f.X.Dir, "transcripts"), offsets: map[string]int64{},
		emit: func(c LogChunk) error { _, err := w.Write(c.Text); return err }}
	for _, path := range allStepFiles(r.root) {
		if info, err := os.Stat(path); err == nil {
			r.offsets[path] = info.Size()
		}
	}
	if req.Following != nil {
		req.Following()
	}
	if !f.Running() {
		// It stopped since the offsets were taken: what it printed
		// meanwhile is still from the moment the follow began.
		return r.catchUp()
	}
	return r.follow(ctx, f.Running)
}

// allStepFiles are the transcripts below root, a session's transcripts
// folder.
func allStepFiles(root string) []string {
	paths, _ := filepath.Glob(filepath.Join(root, "*", "*.log"))
	return paths
}
