package app

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/triggers"
)

// CleanRequest says which finished sessions of the pipeline's store to
// delete: those not updated for OlderThan, but the newest Keep of each
// pipeline and spec.
type CleanRequest struct {
	Pipeline
	// OlderThan is an age as --older-than takes it (see ParseAge).
	OlderThan string `json:"older_than"`
	Keep      int    `json:"keep"`
	// DryRun says what would be removed and removes nothing.
	DryRun bool `json:"dry_run,omitempty"`
}

// CleanResponse is `pipeline clean -o json`: the sessions removed (or,
// with DryRun, that would be), newest first.
type CleanResponse struct {
	Removed []string `json:"removed"`
	DryRun  bool     `json:"dry_run"`
	// Sessions are the removed sessions' lines of the index, in the
	// order of Removed.
	Sessions []store.Summary `json:"-"`
}

// Clean deletes the completed and failed sessions not updated for
// req.OlderThan, keeping the newest req.Keep of each pipeline and spec
// whatever their age, and their checkpoints; running and paused sessions
// are never deleted. It also removes the sessions whose making a crash
// cut short. On an error after some were removed, the response says
// which, with the error.
func Clean(_ context.Context, req CleanRequest) (*CleanResponse, error) {
	age, err := ParseAge(req.OlderThan)
	if err != nil {
		return nil, err
	}
	st, err := req.Open()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	list, err := st.List()
	if err != nil {
		return nil, err
	}
	out := &CleanResponse{Removed: []string{}, DryRun: req.DryRun}
	err = removeOld(st, list, time.Now().Add(-age), req, out)
	if err == nil && !req.DryRun {
		err = tidyStore(st, len(out.Removed) > 0)
	}
	*out = redacted(environmentRedactor(), *out)
	return out, err
}

// removeOld removes, newest first, the finished sessions of list older
// than cutoff beyond the newest req.Keep of their pipeline and spec, and
// adds each to out.
func removeOld(st *store.Store, list []store.Summary, cutoff time.Time, req CleanRequest, out *CleanResponse) error {
	seen := map[string]int{}
	for _, s := range list { // newest first
		seen[s.Key]++
		finished := s.Status == string(engine.StatusCompleted) || s.Status == string(engine.StatusFailed)
		if !finished || seen[s.Key] <= req.Keep || s.Updated.After(cutoff) {
			continue
		}
		if !req.DryRun {
			// The checkpoints are those of the session's own record, not
			// of its index line, which another hand may have written.
			meta, findErr := st.Find(s.ID)
			err := st.Remove(s.ID)
			if errors.Is(err, store.ErrNotFound) {
				continue // removed meanwhile, by another clean
			}
			if err != nil {
				return StoreWriteFailed(err)
			}
			if findErr != nil || meta.ID != s.ID {
				meta = store.Meta{}
			}
			if err := removeCheckpoints(st, s.ID, meta.File); err != nil {
				req.say("pipeline: session %s removed, its checkpoints not: %v", s.ID, err)
			}
		}
		out.Removed, out.Sessions = append(out.Removed, s.ID), append(out.Sessions, s)
	}
	return nil
}

// tidyStore compacts the index after removals, and removes the sessions
// whose making a crash cut short.
func tidyStore(st *store.Store, removed bool) error {
	if removed {
		if err := st.CompactIndex(); err != nil {
			return StoreWriteFailed(err)
		}
	}
	if _, err := st.RemoveUnfinished(time.Hour); err != nil {
		return StoreWriteFailed(err)
	}
	return nil
}

// removeCheckpoints deletes the refs under refs/pipeline/<id>/ of a
// removed session, in the git work tree of its phases.yaml (file, as its
// meta.json names it).
func removeCheckpoints(st *store.Store, id, file string) error {
	if file == "" {
		return nil
	}
	git := session.GitFor(filepath.Dir(st.Abs(file)))
	if git == nil {
		return nil
	}
	return git.DeleteRefs(session.CheckpointRef(id, ""))
}

// maxDays is the longest age clean takes, in days: a time.Duration holds
// about 292 years.
const maxDays = int64(math.MaxInt64 / int64(24*time.Hour))

// ParseAge reads an age as clean's --older-than takes it: days (7d), a
// Go duration (12h, 90m), or both (1d12h); more than zero, and short
// enough to be held at all. A longer one is refused rather than wrapped
// round to a negative age, which made every finished session old enough
// to go.
func ParseAge(text string) (time.Duration, error) {
	// The durations of phases.yaml, days included, overflow refused.
	age, err := triggers.ParseDuration(text)
	if err != nil || age <= 0 {
		return 0, Usagef("--older-than %q is not an age clean can use: write a duration such as 7d, 12h or 1d12h, more than zero and at most %dd", text, maxDays)
	}
	return age, nil
}
