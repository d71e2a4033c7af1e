//go:build agentclis

package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

// Issue 14 through the real agent CLIs against their mocks: the markers
// an agent writes reach the session's working set through pipeline run,
// a later turn's [DONE] closes a task, and compaction asks the Claude
// session for its working set, then starts a fresh one with it.

// markerPhases is a feature of two phases: the design's reply holds the
// markers, the build's closes the task.
const markerPhases = `
phases:
  - name: design
    prompt: Draft the design.
  - name: build
    prompt: Build it.
`

// markerReplies answers the design with markers (one split across two
// deltas or chunks, one a bullet, one bold) and the build with a [DONE]
// that is a close match of the task; anything else as the mock does.
func markerReplies(prompt string) string {
	switch {
	case strings.Contains(prompt, "Draft the design."):
		return "Looking at the code.\n" +
			"[DECI" + mockapi.DeltaBreak + "SION] keep the cache in memory\n" +
			"- [FACT] the API lives at /v2\n" +
			"**[TODO]** Fix login" + mockapi.DeltaBreak + " bug\n" +
			"[TODO] document the retry flag\n" +
			"[SUMMARY] design drafted"
	case strings.Contains(prompt, "Build it."):
		return "Built it.\n[DONE] fixed the login bugs\n"
	}
	return ""
}

// checkMarkerMemory checks the working set markerReplies leaves, read with
// pipeline memory -o json in dir with env.
func checkMarkerMemory(t *testing.T, dir string, env []string) {
	t.Helper()
	m := memoryOf(t, dir, env)
	if m.Status != "completed" {
		t.Errorf("session %s", m.Status)
	}
	wantItem(t, "decisions", m.Decisions, "keep the cache in memory", "agent", "design")
	wantItem(t, "pinned facts", m.Pinned, "the API lives at /v2", "agent", "design")
	wantItem(t, "summary", m.Summary, "design drafted", "agent", "design")
	wantItem(t, "open tasks", m.Open, "document the retry flag", "agent", "design")
	done := wantItem(t, "done tasks", m.Done, "Fix login bug", "agent", "design")
	if done.Closed == nil || done.ClosedBy != "fixed the login bugs" {
		t.Errorf("the task: closed %v by %q; want closed by the build's [DONE]", done.Closed, done.ClosedBy)
	}
	if len(m.Decisions) != 1 || len(m.Pinned) != 1 || len(m.Open) != 1 || len(m.Done) != 1 {
		t.Errorf("decisions %q, facts %q, open %q, done %q: each marker once", texts(m.Decisions), texts(m.Pinned), texts(m.Open), texts(m.Done))
	}
}

func TestClaudeMarkersReachTheWorkingSet(t *testing.T) {
	r := newClaudeRun(t, "version: 1\nagent: {kind: claude, model: sonnet, feature: f}\n"+markerPhases)
	r.mock.SetReplyFunc(markerReplies)
	r.run(t, 0)
	checkMarkerMemory(t, r.dir, r.env)
}

func TestGeminiMarkersReachTheWorkingSet(t *testing.T) {
	mock, dir := geminiSetup(t)
	mock.SetReplyFunc(markerReplies)
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: gemini, model: gemini-2.5-flash, feature: f}\n"+markerPhases)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	checkMarkerMemory(t, dir, nil)
}

func TestCodexMarkersReachTheWorkingSet(t *testing.T) {
	mock, dir := codexProject(t)
	mock.SetReplyFunc(markerReplies)
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: codex, model: gpt-5.5, feature: f}\n"+markerPhases)
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	checkMarkerMemory(t, dir, nil)
}

// compactionPhases compacts after the design's turn (the mock reports
// 5000 input tokens a turn); the build phase does not compact.
const compactionPhases = `version: 1
agent: {kind: claude, model: sonnet, feature: f}
phases:
  - name: design
    prompt: Draft the design.
    compact_when: context_tokens > 1000
  - name: build
    prompt: Build it.
`

// compactionPrompt recognises the built-in compaction prompt.
func compactionPrompt(prompt string) bool {
	return strings.Contains(prompt, "Pipeline is compacting this conversation")
}

// compactionStatus is what the tests read of status -o json about
// compaction.
type compactionStatus struct {
	Context struct {
		Compactions int `json:"compactions"`
	} `json:"context"`
	Phases []struct {
		Name          string `json:"name"`
		NativeSession string `json:"native_session"`
		Context       struct {
			Compactions int `json:"compactions"`
		} `json:"context"`
		Fired []firingNote `json:"triggers_fired"`
	} `json:"phases"`
}

// firingNote is a trigger fired, with its note.
type firingNote struct {
	Reason string `json:"reason"`
	Note   string `json:"note"`
}

func (r *claudeRun) compactionStatus(t *testing.T) compactionStatus {
	t.Helper()
	out := r.pipeline(t, "status", "-o", "json")
	var s compactionStatus
	if err := json.Unmarshal([]byte(out.stdout), &s); err != nil || len(s.Phases) != 2 {
		t.Fatalf("status -o json: exit %d, %v: %s", out.code, err, out.stdout)
	}
	return s
}

// The compaction turn goes to the design's native session (it carries
// the design's exchange); the build's turn starts a new session whose
// first prompt holds the working set the answer wrote, the markers, and
// the compaction's wording; status counts one compaction for the design.
func TestClaudeCompactionHandsTheWorkingSetToAFreshSession(t *testing.T) {
	r := newClaudeRun(t, compactionPhases)
	r.mock.SetUsage(5000, 50)
	r.mock.SetReplyFunc(func(prompt string) string {
		switch {
		case compactionPrompt(prompt):
			return "Here it is:\n```json\n" + `{"summary": "the design is drafted; storage is next",
 "pinned_facts": ["the API lives at /v2"],
 "decisions": ["keep the cache in memory"],
 "open_tasks": ["write the storage layer"],
 "files_touched": ["docs/design.md"]}` + "\n```\n"
		case strings.Contains(prompt, "Draft the design."):
			return "Design drafted.\n[DECISION] use sqlite for the queue\n"
		}
		return ""
	})
	r.run(t, 0)
	turns := claudeTurns(t, r.mock, 3)
	design, compaction, build := turns[0], turns[1], turns[2]
	if !claudeFresh(design) {
		t.Errorf("the design's turn is not a new conversation: %+v", design.Messages)
	}
	if !compactionPrompt(compaction.LastUserText()) || !compaction.HasMessage("user", "Draft the design.") ||
		!compaction.HasMessage("assistant", "Design drafted.") {
		t.Errorf("the compaction turn was not sent in the design's session: %+v", compaction.Messages)
	}
	if !claudeFresh(build) {
		t.Fatalf("the build's turn did not start a new session: %+v", build.Messages)
	}
	first := build.LastUserText()
	wantIn(t, first, []string{"Your conversation was compacted (compact_when context_tokens > 1000 was true): this is a fresh session",
		"## Pinned facts\n- the API lives at /v2",
		"## Decisions made so far (oldest first)\n- use sqlite for the queue\n- keep the cache in memory",
		"- write the storage layer", "## The end of the previous conversation", "Design drafted.", "Build it."},
		[]string{"Pipeline is compacting"})

	s := r.compactionStatus(t)
	if s.Context.Compactions != 1 || s.Phases[0].Context.Compactions != 1 || s.Phases[1].Context.Compactions != 0 {
		t.Errorf("compactions: %d in all, design %d, build %d; want 1, 1, 0", s.Context.Compactions,
			s.Phases[0].Context.Compactions, s.Phases[1].Context.Compactions)
	}
	if i := slices.IndexFunc(s.Phases[0].Fired, func(f firingNote) bool { return f.Reason == "compaction" }); i < 0 || s.Phases[0].Fired[i].Note != "the agent wrote its working set" {
		t.Errorf("the design's firings %+v", s.Phases[0].Fired)
	}
	// The compaction turn is in the design's own transcript, under the
	// CLI; the build's session is another.
	if id := s.Phases[0].NativeSession; id == "" || !strings.Contains(claudeTranscript(t, r.home, id), "Pipeline is compacting this conversation") {
		t.Errorf("the design's native session %q does not hold the compaction turn", id)
	}
	if s.Phases[1].NativeSession == "" || s.Phases[1].NativeSession == s.Phases[0].NativeSession {
		t.Errorf("build's native session %q, design's %q", s.Phases[1].NativeSession, s.Phases[0].NativeSession)
	}
	verbose := r.pipeline(t, "status", "-v").stdout
	if !regexp.MustCompile(`(?m)^design\s+completed(\s+\S+){6}\s+1\s`).MatchString(verbose) ||
		!regexp.MustCompile(`(?m)^context \(design\): .*1 compaction`).MatchString(verbose) {
		t.Errorf("status -v does not show the design's compaction:\n%s", verbose)
	}
	m := memoryOf(t, r.dir, r.env)
	wantItem(t, "open tasks", m.Open, "write the storage layer", "compaction", "design")
	wantItem(t, "decisions", m.Decisions, "use sqlite for the queue", "agent", "design")
	if got := m.Summary; len(got) == 0 || got[0].Text != "the design is drafted; storage is next" || got[0].Source != "compaction" {
		t.Errorf("summary %+v", got)
	}
	if !slices.Contains(m.Files, fileTouch{Path: "docs/design.md", Phase: "design"}) {
		t.Errorf("files touched %+v", m.Files)
	}
}

// An answer that is not the working set: the fallback is recorded, and
// the fresh session still gets the markers of the design's turn.
func TestClaudeCompactionFallsBackToTheMarkers(t *testing.T) {
	r := newClaudeRun(t, compactionPhases)
	r.mock.SetUsage(5000, 50)
	r.mock.SetReplyFunc(func(prompt string) string {
		switch {
		case compactionPrompt(prompt):
			return "I would rather not write JSON today."
		case strings.Contains(prompt, "Draft the design."):
			return "Design drafted.\n[DECISION] use sqlite for the queue\n[TODO] write the storage layer\n"
		}
		return ""
	})
	r.run(t, 0)
	turns := claudeTurns(t, r.mock, 3)
	if !compactionPrompt(turns[1].LastUserText()) || !turns[1].HasMessage("assistant", "Design drafted.") {
		t.Errorf("the compaction turn was not sent in the design's session: %+v", turns[1].Messages)
	}
	build := turns[2]
	if !claudeFresh(build) {
		t.Fatalf("the build's turn did not start a new session: %+v", build.Messages)
	}
	wantIn(t, build.LastUserText(), []string{"Your conversation was compacted", "- use sqlite for the queue",
		"## Open tasks", "- write the storage layer", "Build it."}, []string{"rather not write JSON"})
	s := r.compactionStatus(t)
	if s.Phases[0].Context.Compactions != 1 {
		t.Errorf("design's compactions %d, want 1", s.Phases[0].Context.Compactions)
	}
	fell := false
	for _, f := range s.Phases[0].Fired {
		fell = fell || f.Reason == "compaction" && strings.Contains(f.Note, "held no JSON object of the working set's shape")
	}
	if !fell {
		t.Errorf("the fallback is not recorded: %+v", s.Phases[0].Fired)
	}
}
