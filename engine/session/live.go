package session

import (
	"encoding/json"
	"time"
)

// liveFile holds the running step's progress for status. It is not part
// of the event log: it is rewritten as the step runs, without a sync, and
// read only while a runner holds the session's lock.
const liveFile = "live.json"

// liveEvery is how often, at most, the live file is rewritten.
const liveEvery = time.Second

// Live is the progress of the step running, as status shows it.
type Live struct {
	At             time.Time     `json:"at"`
	Phase          string        `json:"phase"`
	Step           string        `json:"step"`
	Attempt        int           `json:"attempt"`
	StepTokens     int           `json:"step_tokens"`
	TotalTokens    int           `json:"total_tokens"`
	CostUSD        float64       `json:"cost_usd"`
	StepElapsed    time.Duration `json:"step_elapsed"`
	SessionElapsed time.Duration `json:"session_elapsed"`
}

// SetLive keeps l for status: at most once a second for the same step,
// at once for a new one. The zero Live removes it (no step runs).
func (s *Session) SetLive(l Live) {
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	if l == (Live{}) {
		s.live = Live{}
		if s.liveKept && s.X.RemoveFile(liveFile) == nil {
			s.liveKept = false
		}
		return
	}
	same := l.Phase == s.live.Phase && l.Step == s.live.Step && l.Attempt == s.live.Attempt
	if same && l.At.Sub(s.live.At) < liveEvery && !l.At.Before(s.live.At) {
		return
	}
	content, err := json.Marshal(l)
	if err != nil {
		return
	}
	// No sync: a live file lost to a crash is of no use anyway.
	s.liveKept = true // a write that failed may have left one
	if s.X.WriteFileNoSync(liveFile, content) == nil {
		s.live = l
	}
}

// Live returns the progress of the step running, when a runner holds the
// session and has kept one.
func (r *Ref) Live() (Live, bool) {
	if !r.Running() {
		return Live{}, false
	}
	content, err := r.X.ReadFile(liveFile)
	if err != nil || content == nil {
		return Live{}, false
	}
	var l Live
	if json.Unmarshal(content, &l) != nil {
		return Live{}, false
	}
	return l, true
}
