package ui_test

import (
	"net/http"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/ui"
)

// twoOutcomes makes two sessions of the project: one paused at design's
// checkpoint, one run to the end.
func twoOutcomes(t *testing.T) (dir, paused, completed string) {
	t.Helper()
	dir = project(t)
	paused = pausedSession(t, dir)
	completed = pausedSession(t, dir)
	pipeline(t, dir, 0, "resume", completed)
	return dir, paused, completed
}

// GET /api/diff is pipeline diff -o json: the sessions side by side and
// where they diverged.
func TestAPIDiffIsTheDiffJSON(t *testing.T) {
	dir, paused, completed := twoOutcomes(t)
	_, hs := serve(t, ui.Options{Root: dir})
	var d struct {
		A, B struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		Same       bool `json:"same"`
		Divergence *struct {
			Phase string `json:"phase"`
		} `json:"divergence"`
		Phases []struct {
			Name string `json:"name"`
		} `json:"phases"`
	}
	getJSON(t, hs.URL+"/api/diff?a="+paused+"&b="+completed, &d)
	if d.A.ID != paused || d.B.ID != completed || d.A.Status != "paused" || d.B.Status != "completed" {
		t.Errorf("the sides: %+v and %+v", d.A, d.B)
	}
	if d.Same || d.Divergence == nil || d.Divergence.Phase != "design" || len(d.Phases) != 2 {
		t.Errorf("the diff: same %v, divergence %+v, %d phases; want diverged at design, 2 phases", d.Same, d.Divergence, len(d.Phases))
	}
	for url, want := range map[string]int{
		"/api/diff?a=" + paused:                             http.StatusBadRequest,
		"/api/diff?a=20990101-000000000-000000&b=" + paused: http.StatusNotFound,
	} {
		res, err := http.Get(hs.URL + url)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("GET %s: %s, want %d", url, res.Status, want)
		}
	}
}

// B in another store below the folder served is found there, wherever
// the server runs (these tests run in internal/ui, far from the root).
func TestAPIDiffAcrossStores(t *testing.T) {
	root, demo, other := twoPipelines(t)
	_, hs := serve(t, ui.Options{Root: root})
	var d struct {
		A, B struct {
			ID       string `json:"id"`
			Pipeline string `json:"pipeline"`
		}
	}
	getJSON(t, hs.URL+"/api/diff?a="+demo+"&b="+other, &d)
	if d.A.ID != demo || d.B.ID != other || d.A.Pipeline != "demo" || d.B.Pipeline != "other" {
		t.Errorf("the sides: %+v and %+v, want %s of demo and %s of other", d.A, d.B, demo, other)
	}
}
