package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

// sessionRow is a session as GET /api/sessions lists it: the line of
// pipeline sessions --all -o json, with where its phase stands in its
// plan (phase_number of phases; 0 when the plan cannot be read), the
// attempts its phases took, and, for a session that runs on a fleet,
// where.
type sessionRow struct {
	app.SessionLine
	PhaseNumber int `json:"phase_number"`
	Phases      int `json:"phases"`
	// Attempts adds up the attempts of the session's phases (a phase run
	// once is one), as of its last snapshot.
	Attempts int `json:"attempts"`
	// OnFleet names the fleet a fleet session runs on.
	OnFleet string `json:"on_fleet,omitempty"`
}

// sessionPage is what GET /api/list answers: one page of the sessions
// the filters keep, newest change first, and what the page's filters
// offer.
type sessionPage struct {
	// Total counts every session below the root; Matched those the
	// filters keep.
	Total    int          `json:"total"`
	Matched  int          `json:"matched"`
	Offset   int          `json:"offset"`
	Limit    int          `json:"limit"`
	Sessions []sessionRow `json:"sessions"`
	// Pipelines and Specs are the values the sessions have, for the
	// filters; Statuses counts the sessions of each status.
	Pipelines []string       `json:"pipelines"`
	Specs     []string       `json:"specs"`
	Statuses  map[string]int `json:"statuses"`
}

// pageLimit is the page's length when GET /api/list is not given
// ?limit=; maxPageLimit bounds it.
const (
	pageLimit    = 100
	maxPageLimit = 1000
)

// listFilter is what the session listings filter and page by.
type listFilter struct {
	status, pipeline, spec string
	offset, limit          int
}

// parseListFilter reads the query's filters; limit 0 is every session.
func parseListFilter(r *http.Request, defaultLimit int) (listFilter, string) {
	q := r.URL.Query()
	f := listFilter{status: q.Get("status"), pipeline: q.Get("pipeline"), spec: q.Get("spec"), limit: defaultLimit}
	if f.status != "" && f.status != app.StatusOnFleet && !slices.Contains(app.Statuses, f.status) {
		return f, "status must be running, paused, completed, failed or fleet, not " + strconv.Quote(f.status)
	}
	for name, to := range map[string]*int{"offset": &f.offset, "limit": &f.limit} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return f, name + " must be a number, 0 or more, not " + strconv.Quote(v)
			}
			*to = n
		}
	}
	f.limit = min(f.limit, maxPageLimit)
	if defaultLimit == 0 && q.Get("limit") == "" {
		f.limit = 0
	}
	return f, ""
}

// keeps tells whether the filters keep a session.
func (f listFilter) keeps(line app.SessionLine) bool {
	return (f.status == "" || line.Status == f.status) && (f.pipeline == "" || line.Pipeline == f.pipeline) &&
		(f.spec == "" || line.Spec == f.spec)
}

// listSessions is GET /api/sessions: every session the filters keep (a
// page of them with ?limit= and ?offset=); X-Total-Count says how many
// the filters keep.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	f, bad := parseListFilter(r, 0)
	if bad != "" {
		writeError(w, http.StatusBadRequest, bad)
		return
	}
	lines, err := s.allSessions(r.Context())
	if err != nil {
		writeFailure(w, err)
		return
	}
	kept := slices.DeleteFunc(lines, func(l app.SessionLine) bool { return !f.keeps(l) })
	w.Header().Set("X-Total-Count", strconv.Itoa(len(kept)))
	writeJSON(w, http.StatusOK, s.rows(pageOf(kept, f)))
}

// listPage is GET /api/list: the sessions page's view, a page of rows
// and the filters' choices, so that a page of 10,000 sessions sends and
// draws only the rows it shows.
func (s *Server) listPage(w http.ResponseWriter, r *http.Request) {
	f, bad := parseListFilter(r, pageLimit)
	if bad != "" {
		writeError(w, http.StatusBadRequest, bad)
		return
	}
	lines, err := s.allSessions(r.Context())
	if err != nil {
		writeFailure(w, err)
		return
	}
	out := sessionPage{Total: len(lines), Offset: f.offset, Limit: f.limit, Statuses: map[string]int{}}
	pipelines, specs := map[string]bool{}, map[string]bool{}
	kept := lines[:0:0]
	for _, l := range lines {
		pipelines[l.Pipeline], specs[l.Spec] = true, true
		if (f.pipeline == "" || l.Pipeline == f.pipeline) && (f.spec == "" || l.Spec == f.spec) {
			out.Statuses[l.Status]++
		}
		if f.keeps(l) {
			kept = append(kept, l)
		}
	}
	out.Matched = len(kept)
	out.Pipelines, out.Specs = sortedKeys(pipelines), sortedKeys(specs)
	out.Sessions = s.rows(pageOf(kept, f))
	writeJSON(w, http.StatusOK, out)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		if k != "" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// pageOf is the lines of the filter's page (all of them with limit 0).
func pageOf(lines []app.SessionLine, f listFilter) []app.SessionLine {
	if f.offset >= len(lines) {
		return nil
	}
	lines = lines[f.offset:]
	if f.limit > 0 && len(lines) > f.limit {
		lines = lines[:f.limit]
	}
	return lines
}

// allSessions lists the sessions below the root, as sessions --all, and
// follows their stores for /api/events. The listing is kept while no
// store below the root changed (its index the same size and time, no
// event from its watch since), and while it lists a running session for
// at most listingTTL: 10,000 sessions cost app.Sessions tens of
// milliseconds each time, and a page reads them on every load and after
// every change.
func (s *Server) allSessions(ctx context.Context) ([]app.SessionLine, error) {
	dirs, err := app.FindStores(s.root)
	if err != nil {
		return nil, err
	}
	s.events.followDirs(dirs)
	stamp, gen := indexStamp(dirs), s.events.generation()
	c := s.listing
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lines != nil && c.stamp == stamp && c.gen == gen && (!c.running || time.Since(c.at) < listingTTL) {
		return s.withFleets(ctx, slices.Clone(c.lines)), nil
	}
	resp, err := app.Sessions(ctx, app.SessionsRequest{All: true, Root: s.root})
	if err != nil {
		return nil, err
	}
	c.lines, c.stamp, c.gen, c.at = resp.Sessions, stamp, gen, time.Now()
	c.running = slices.ContainsFunc(c.lines, func(l app.SessionLine) bool { return l.Status == string(engine.StatusRunning) })
	return s.withFleets(ctx, slices.Clone(resp.Sessions)), nil
}

// withFleets is the lines with each fleet session's as its fleet says,
// when the server can ask it (never kept: the fleet's state changes
// without a local store knowing).
func (s *Server) withFleets(ctx context.Context, lines []app.SessionLine) []app.SessionLine {
	if s.fleets.dial == nil {
		return lines
	}
	for i, line := range lines {
		if line.Fleet != nil {
			lines[i] = s.fleetLine(ctx, line)
		}
	}
	return lines
}

// listingTTL bounds how long a listing with a running session is kept: a
// runner killed outside (kill -9) changes no file, only whether its lock
// is held, and shows as paused (runner-died) once the listing is read
// again.
const listingTTL = 2 * time.Second

// listingCache is the last listing of the sessions below the root, and
// what it was read at.
type listingCache struct {
	mu    sync.Mutex
	lines []app.SessionLine
	stamp string
	gen   uint64
	at    time.Time
	// running: a session in it was running, and its runner may die
	// without a trace.
	running bool
}

// indexStamp says what the stores' indexes are now: each one's size and
// time. Every change of a session appends to its store's index.
func indexStamp(dirs []string) string {
	var b strings.Builder
	for _, dir := range dirs {
		b.WriteString(dir)
		if info, err := os.Stat(filepath.Join(dir, store.IndexName)); err == nil {
			fmt.Fprintf(&b, " %d %d", info.Size(), info.ModTime().UnixNano())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// rows makes the lines rows: their plan's phases and their attempts.
func (s *Server) rows(lines []app.SessionLine) []sessionRow {
	plans, opened := planCache{}, openStores{}
	defer opened.close()
	rows := make([]sessionRow, len(lines))
	for i, line := range lines {
		if line.Fleet != nil {
			rows[i].OnFleet = line.Fleet.Where()
		}
		rows[i].SessionLine = line
		if names := plans.phases(line.File, line.Spec); len(names) > 0 {
			rows[i].Phases = len(names)
			rows[i].PhaseNumber = slices.Index(names, line.Phase) + 1
		}
		rows[i].Attempts = s.attempts.of(line.Summary, opened)
	}
	return rows
}

// planCache reads each pipeline and spec's phase names once per listing.
type planCache map[[2]string][]string

func (c planCache) phases(file, specPath string) []string {
	key := [2]string{file, specPath}
	if names, ok := c[key]; ok {
		return names
	}
	var names []string
	if plan, err := spec.Load(file, specPath); err == nil {
		for _, p := range plan.Phases {
			names = append(names, p.Name)
		}
	}
	c[key] = names
	return names
}

// attemptCache holds the attempts of each session as of its index
// line's time: the index does not hold them, and the snapshot that does
// is read once per change of the session, not once per listing.
type attemptCache struct {
	// storeOf is the folder of the store that holds a session, "" when
	// none below the root does.
	storeOf func(id string) string
	mu      sync.Mutex
	known   map[string]attemptsAt
}

type attemptsAt struct {
	updated  time.Time
	attempts int
}

// maxAttemptsKept bounds the cache; past it, it starts again.
const maxAttemptsKept = 100000

func newAttemptCache(storeOf func(id string) string) *attemptCache {
	return &attemptCache{storeOf: storeOf, known: map[string]attemptsAt{}}
}

// of is the session's attempts, read from its snapshot when the cache
// does not have them as of sum.Updated; 0 when it cannot be read.
func (c *attemptCache) of(sum store.Summary, opened openStores) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.known[sum.ID]; ok && k.updated.Equal(sum.Updated) {
		return k.attempts
	}
	n := snapshotAttempts(opened.open(c.storeOf(sum.ID)), sum.ID)
	if len(c.known) >= maxAttemptsKept {
		c.known = map[string]attemptsAt{}
	}
	c.known[sum.ID] = attemptsAt{updated: sum.Updated, attempts: n}
	return n
}

// openStores are the stores a listing opened, by folder, each opened
// once; nil for one that cannot be opened.
type openStores map[string]*store.Store

func (o openStores) open(dir string) *store.Store {
	if dir == "" {
		return nil
	}
	st, ok := o[dir]
	if !ok {
		var err error
		if st, err = store.OpenExisting(dir); err != nil {
			st = nil
		}
		o[dir] = st
	}
	return st
}

func (o openStores) close() {
	for _, st := range o {
		if st != nil {
			st.Close()
		}
	}
}

// snapshotAttempts adds up the phases' attempts in the snapshot of
// session id of st.
func snapshotAttempts(st *store.Store, id string) int {
	if st == nil {
		return 0
	}
	// state.json, or the log whose last stop carries the state.
	_, content, err := st.ReadSnapshotFile(id)
	if err != nil {
		return 0
	}
	var snap struct {
		State struct {
			Phases []struct {
				Attempts int `json:"attempts"`
			} `json:"phases"`
		} `json:"state"`
	}
	if json.Unmarshal(content, &snap) != nil {
		return 0
	}
	n := 0
	for _, p := range snap.State.Phases {
		n += p.Attempts
	}
	return n
}
