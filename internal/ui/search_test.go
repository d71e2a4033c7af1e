package ui_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/ui"
)

// twoPipelines makes, below a new folder, the project as pipeline demo
// and again as pipeline other (in other/), each with a paused session,
// whose ids it returns.
func twoPipelines(t *testing.T) (root, demo, other string) {
	t.Helper()
	root = project(t)
	dir := filepath.Join(root, "other")
	os.MkdirAll(dir, 0o755)
	os.CopyFS(dir, os.DirFS(project(t)))
	phases := strings.Replace(testPhases, "name: demo", "name: other", 1)
	phases = strings.Replace(phases, "Build the greeting.", "Build the farewell.", 1)
	if err := os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(phases), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, pausedSession(t, root), pausedSession(t, dir)
}

// The search is pipeline search's over every store below the folder:
// each hit names its session.
func TestAPISearchFindsTheSessionsOfEveryStore(t *testing.T) {
	root, demo, other := twoPipelines(t)
	_, hs := serve(t, ui.Options{Root: root})
	var r struct {
		Query string `json:"query"`
		Hits  []struct {
			Session string `json:"session"`
			Phase   string `json:"phase"`
			Marked  string `json:"marked"`
		} `json:"hits"`
	}
	getJSON(t, hs.URL+"/api/search?q=drafting", &r)
	found := map[string]bool{}
	for _, h := range r.Hits {
		found[h.Session] = true
		if !strings.Contains(h.Marked, "«drafting»") {
			t.Errorf("hit %+v: want the match marked", h)
		}
	}
	if r.Query != "drafting" || !found[demo] || !found[other] || len(found) != 2 {
		t.Errorf("search for drafting: %+v; want hits in sessions %s and %s", r, demo, other)
	}
	for _, bad := range []string{"/api/search?q=", "/api/search?q=drafting&limit=none"} {
		res, err := http.Get(hs.URL + bad)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: %s, want 400", bad, res.Status)
		}
	}
}
