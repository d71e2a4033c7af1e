package ui

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// analytics is what GET /api/analytics answers: the sessions below the
// root summed up from their status reports (pipeline status -o json).
type analytics struct {
	Sessions int `json:"sessions"`
	// Phases: each phase of each pipeline, over the sessions that ran it.
	Phases []phaseTotals `json:"phases"`
	// Pauses counts the triggers fired, by reason.
	Pauses []reasonCount `json:"pauses"`
	// Cost is each session's cost by when it started, oldest first, and
	// the sum up to it.
	Cost []costPoint `json:"cost"`
	// Unread are the sessions whose report could not be read, with why.
	Unread map[string]string `json:"unread,omitempty"`
}

// phaseTotals is a phase summed over the sessions that ran it.
type phaseTotals struct {
	Pipeline   string  `json:"pipeline"`
	Phase      string  `json:"phase"`
	Sessions   int     `json:"sessions"`
	DurationMS int64   `json:"duration_ms"`
	Tokens     int     `json:"tokens"`
	CostUSD    float64 `json:"cost_usd"`
	Retries    int     `json:"retries"`
	Restarts   int     `json:"restarts"`
}

type reasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

type costPoint struct {
	Session string    `json:"session"`
	Created time.Time `json:"created"`
	CostUSD float64   `json:"cost_usd"`
	Total   float64   `json:"total_usd"`
}

// analyticsOf answers GET /api/analytics[?pipeline=P][&spec=S].
func (s *Server) analyticsOf(w http.ResponseWriter, r *http.Request) {
	resp, err := app.Sessions(r.Context(), app.SessionsRequest{All: true, Root: s.root})
	if err != nil {
		writeFailure(w, err)
		return
	}
	dirs, err := app.FindStores(s.root)
	if err != nil {
		writeFailure(w, err)
		return
	}
	pipelineName, specName := r.URL.Query().Get("pipeline"), r.URL.Query().Get("spec")
	sum := newSummer()
	for _, line := range resp.Sessions {
		if (pipelineName != "" && line.Pipeline != pipelineName) || (specName != "" && line.Spec != specName) {
			continue
		}
		report, err := s.reportOf(r, dirs, line.ID)
		if err != nil {
			sum.out.Unread[line.ID] = err.Error()
			continue
		}
		sum.add(report)
	}
	writeJSON(w, http.StatusOK, sum.done())
}

// reportOf is session id's pipeline status -o json, found in dirs.
func (s *Server) reportOf(r *http.Request, dirs []string, id string) (*app.StatusResponse, error) {
	dir, meta, err := app.FindInStores(dirs, id)
	if err != nil {
		return nil, err
	}
	st, err := store.OpenExisting(dir)
	if err != nil {
		return nil, err
	}
	file := st.Abs(meta.File)
	st.Close()
	return app.Status(r.Context(), app.StatusRequest{Pipeline: app.Pipeline{File: file, StateDir: dir}, Session: meta.ID})
}

// summer sums the reports up.
type summer struct {
	out    analytics
	phases map[[2]string]*phaseTotals
	pauses map[string]int
}

func newSummer() *summer {
	return &summer{out: analytics{Phases: []phaseTotals{}, Pauses: []reasonCount{}, Cost: []costPoint{}, Unread: map[string]string{}},
		phases: map[[2]string]*phaseTotals{}, pauses: map[string]int{}}
}

func (m *summer) add(report *app.StatusResponse) {
	m.out.Sessions++
	m.out.Cost = append(m.out.Cost, costPoint{Session: report.ID, Created: report.Created, CostUSD: report.CostUSD})
	for _, p := range report.Phases {
		for _, f := range p.Fired {
			m.pauses[f.Reason]++
		}
		if p.Attempts == 0 {
			continue // never ran: nothing to count
		}
		key := [2]string{report.Pipeline, p.Name}
		t := m.phases[key]
		if t == nil {
			m.out.Phases = append(m.out.Phases, phaseTotals{Pipeline: report.Pipeline, Phase: p.Name})
			t = &phaseTotals{}
			m.phases[key] = t
		}
		t.Sessions++
		t.DurationMS += p.DurationMS
		t.Tokens += p.Tokens
		t.CostUSD += p.CostUSD
		t.Retries += p.Retries
		t.Restarts += p.Restarts
	}
}

// done is the sums: the phases in the order they were first seen, the
// reasons most frequent first, the cost points by time.
func (m *summer) done() analytics {
	for i, p := range m.out.Phases {
		t := m.phases[[2]string{p.Pipeline, p.Phase}]
		t.Pipeline, t.Phase = p.Pipeline, p.Phase
		m.out.Phases[i] = *t
	}
	for reason, n := range m.pauses {
		m.out.Pauses = append(m.out.Pauses, reasonCount{Reason: reason, Count: n})
	}
	slices.SortFunc(m.out.Pauses, func(a, b reasonCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
	slices.SortFunc(m.out.Cost, func(a, b costPoint) int { return a.Created.Compare(b.Created) })
	total := 0.0
	for i := range m.out.Cost {
		total += m.out.Cost[i].CostUSD
		m.out.Cost[i].Total = total
	}
	if len(m.out.Unread) == 0 {
		m.out.Unread = nil
	}
	return m.out
}
