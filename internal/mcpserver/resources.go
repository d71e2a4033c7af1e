package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/store"
)

const uriPrefix = "pipeline://sessions/"

func sessionURI(id string) string { return uriPrefix + id }

// parseURI splits pipeline://sessions/<id>[/transcripts/<phase>/<file>].
func parseURI(uri string) (id, rel string, ok bool) {
	rest, ok := strings.CutPrefix(uri, uriPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	id, rel, _ = strings.Cut(rest, "/")
	if rel != "" {
		parts := strings.Split(rel, "/")
		if len(parts) != 3 || parts[0] != "transcripts" || !strings.HasSuffix(parts[2], ".log") {
			return "", "", false
		}
		for _, p := range parts {
			if p == "" || p == "." || p == ".." {
				return "", "", false
			}
		}
	}
	return id, rel, true
}

func (s *Server) addResources() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriPrefix + "{session}", Name: "session",
		Title: "A pipeline session", Description: "The session's status, as pipeline status -o json prints it", MIMEType: "application/json"},
		s.readResource)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriPrefix + "{session}/transcripts/{phase}/{file}", Name: "transcript",
		Title: "A step's transcript", Description: fmt.Sprintf("One attempt of one step (<attempt>-<step>.log), its last %d KiB", app.MaxTailBytes>>10),
		MIMEType: "text/plain"}, s.readResource)
	// resources/list lists the sessions as they are now.
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "resources/list" {
				s.syncResources()
			}
			return next(ctx, method, req)
		}
	})
}

// syncResources makes the listed resources the sessions below the root
// and their transcripts.
func (s *Server) syncResources() {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	now := map[string]bool{}
	for _, dir := range s.root.stores() {
		st, err := store.OpenExisting(dir)
		if err != nil {
			continue
		}
		list, _ := st.List()
		for _, sum := range list {
			if !s.root.within(realPath(st.Abs(sum.File))) {
				continue
			}
			uri := sessionURI(sum.ID)
			now[uri] = true
			title := fmt.Sprintf("%s: %s", sum.Pipeline, sum.Status)
			if sum.Phase != "" {
				title += " (" + sum.Phase + ")"
			}
			s.mcp.AddResource(&mcp.Resource{URI: uri, Name: sum.ID, Title: title, MIMEType: "application/json",
				Description: "status of session " + sum.ID + " of " + s.root.rel(st.Abs(sum.File))}, s.readResource)
			files, _ := st.StepFiles(sum.ID)
			for _, f := range files {
				if f.Prompt {
					continue
				}
				uri := transcriptURI(sum.ID, f)
				now[uri] = true
				s.mcp.AddResource(&mcp.Resource{URI: uri, Name: sum.ID + "/" + strings.TrimPrefix(f.Rel, "transcripts/"), MIMEType: "text/plain",
					Size: f.Size, Description: fmt.Sprintf("transcript of step %s, attempt %d of phase %s", f.Step, f.Attempt, f.Phase)}, s.readResource)
			}
		}
		st.Close()
	}
	var gone []string
	for uri := range s.subs.listed {
		if !now[uri] {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	s.subs.listed = now
}

func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, rel, ok := parseURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if rel == "" {
		status, err := s.statusOf(ctx, Target{Session: id})
		if err != nil {
			return nil, fmt.Errorf("%s: %v", uri, err)
		}
		text, err := json.MarshalIndent(status, "", "  ")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(text)}}}, nil
	}
	f, err := s.root.session(id, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %v", uri, err)
	}
	st, err := store.OpenExisting(f.store)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	file, err := st.OpenSessionFile(f.meta.ID, rel)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	defer file.Close()
	size, err := file.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	from := max(0, size-app.MaxTailBytes)
	buf := make([]byte, size-from)
	if _, err := file.ReadAt(buf, from); err != nil && err != io.EOF {
		return nil, err
	}
	text := string(buf)
	if from > 0 {
		text = fmt.Sprintf("[the first %d bytes are left out: a transcript resource is its last %d KiB; the logs tool tails it by lines]\n", from, app.MaxTailBytes>>10) + text
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: text}}}, nil
}

// ---- subscriptions ----

// subscriptions follow the stores of the subscribed sessions
// (app.StoreWatcher: each write of a store's index.tsv or of a lock)
// and read the subscribed sessions' lines again; a session whose status,
// phase or pause reason changed gets notifications/resources/updated.
type subscriptions struct {
	s    *Server
	mu   sync.Mutex
	w    *app.StoreWatcher
	subs map[string]*subscribed
	// listed are the resources listed last (Server.listResources).
	listed map[string]bool
	// closed: no watcher is made after close.
	closed bool
}

type subscribed struct {
	id, store string
	count     int
	last      app.SessionState
}

func newSubscriptions(s *Server) *subscriptions {
	return &subscriptions{s: s, subs: map[string]*subscribed{}, listed: map[string]bool{}}
}

func (u *subscriptions) subscribe(uri string) error {
	id, rel, ok := parseURI(uri)
	if !ok || rel != "" {
		return fmt.Errorf("subscribe to a session, %s<id>: a transcript has no notifications (the logs tool tails it)", uriPrefix)
	}
	f, err := u.s.root.session(id, "")
	if err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if sub := u.subs[uri]; sub != nil {
		sub.count++
		return nil
	}
	if u.closed {
		return fmt.Errorf("the server is closing")
	}
	if u.w == nil {
		if u.w, err = app.NewStoreWatcher(u.changed); err != nil {
			return err
		}
	}
	if _, err := u.w.Add(f.store); err != nil {
		return err
	}
	u.subs[uri] = &subscribed{id: f.meta.ID, store: filepath.Clean(f.store), count: 1, last: stateOf(f.store, f.meta.ID)}
	return nil
}

func (u *subscriptions) unsubscribe(uri string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if sub := u.subs[uri]; sub != nil {
		if sub.count--; sub.count <= 0 {
			delete(u.subs, uri)
		}
	}
}

// changed reads the subscribed sessions of the store in dir again, and
// notifies those whose state changed.
func (u *subscriptions) changed(dir string) {
	var notify []string
	u.mu.Lock()
	for uri, sub := range u.subs {
		if sub.store != dir {
			continue
		}
		if now := stateOf(dir, sub.id); now != sub.last && now.Status != "" {
			sub.last = now
			notify = append(notify, uri)
		}
	}
	u.mu.Unlock()
	for _, uri := range notify {
		u.s.mcp.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}

// stateOf is session id's state as its index line says, and as pipeline
// sessions shows it (app.SessionStates).
func stateOf(dir, id string) app.SessionState { return app.SessionStates(dir)[id] }

func (u *subscriptions) close() error {
	u.mu.Lock()
	w := u.w
	u.closed = true
	u.mu.Unlock()
	if w != nil {
		return w.Close()
	}
	return nil
}
