package ui_test

import (
	"testing"

	"github.com/pipeline-dev/pipeline/internal/ui"
)

// GET /api/analytics sums the sessions' reports: per phase, the sessions
// that ran it and their tokens; the triggers fired by reason; the cost
// by time, oldest first.
func TestAPIAnalyticsSumsTheSessions(t *testing.T) {
	dir, paused, completed := twoOutcomes(t)
	_, hs := serve(t, ui.Options{Root: dir})
	var a struct {
		Sessions int `json:"sessions"`
		Phases   []struct {
			Pipeline string `json:"pipeline"`
			Phase    string `json:"phase"`
			Sessions int    `json:"sessions"`
			Tokens   int    `json:"tokens"`
		} `json:"phases"`
		Pauses []struct {
			Reason string `json:"reason"`
			Count  int    `json:"count"`
		} `json:"pauses"`
		Cost []struct {
			Session string `json:"session"`
		} `json:"cost"`
	}
	getJSON(t, hs.URL+"/api/analytics", &a)
	if a.Sessions != 2 || len(a.Phases) != 2 {
		t.Fatalf("analytics: %+v; want 2 sessions, 2 phases", a)
	}
	design, build := a.Phases[0], a.Phases[1]
	if design.Pipeline != "demo" || design.Phase != "design" || design.Sessions != 2 || design.Tokens == 0 {
		t.Errorf("design: %+v, want run by both sessions, with tokens", design)
	}
	if build.Phase != "build" || build.Sessions != 1 {
		t.Errorf("build: %+v, want run by the completed session only", build)
	}
	if len(a.Pauses) != 1 || a.Pauses[0].Reason != "checkpoint" || a.Pauses[0].Count != 2 {
		t.Errorf("pauses: %+v, want checkpoint twice", a.Pauses)
	}
	if len(a.Cost) != 2 || a.Cost[0].Session != paused || a.Cost[1].Session != completed {
		t.Errorf("cost points: %+v, want %s then %s", a.Cost, paused, completed)
	}
	var none struct {
		Sessions int `json:"sessions"`
	}
	getJSON(t, hs.URL+"/api/analytics?pipeline=another", &none)
	if none.Sessions != 0 {
		t.Errorf("?pipeline=another: %d sessions, want 0", none.Sessions)
	}
}
