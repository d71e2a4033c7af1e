package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/pipeline-dev/pipeline/app"
)

//go:embed assets
var assets embed.FS

// TokenHeader carries the server's token on every POST: only a page the
// server served knows it, so a page of another site cannot act.
const TokenHeader = "X-Pipeline-Token"

// accessCookie keeps the access token of a remote server once a page was
// opened with ?token=.
const accessCookie = "pipeline_ui_token"

// Options configure a Server.
type Options struct {
	// Root is the folder whose pipelines are served; "." when "".
	Root string
	// Binary is the pipeline binary resume starts as a detached runner;
	// os.Executable() when "".
	Binary string
	// AccessToken, when set, is asked of every request (a server that
	// listens beyond loopback): ?token=, the cookie it sets, or
	// Authorization: Bearer.
	AccessToken string
	// Remote: the server may be reached by another host name than a
	// loopback one (with AccessToken).
	Remote bool
	// Fleet reaches the fleets that sessions run on; nil: fleet sessions
	// show as the local stores know them.
	Fleet FleetBackend
}

// Server serves the dashboard. Close it when done.
type Server struct {
	root        string
	binary      string
	env         []string
	token       string
	accessToken string
	remote      bool
	events      *events
	attempts    *attemptCache
	listing     *listingCache
	fleets      *fleets
	mux         *http.ServeMux
}

// New makes the server: it finds the stores below the root and follows
// them for /api/events.
func New(o Options) (*Server, error) {
	if o.Root == "" {
		o.Root = "."
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		return nil, app.Usagef("%s is not a folder", o.Root)
	}
	if o.Binary == "" {
		if o.Binary, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("finding the pipeline binary resume runs: %w", err)
		}
	}
	s := &Server{root: root, binary: o.Binary, env: app.RunnerEnv(), token: NewToken(),
		accessToken: o.AccessToken, remote: o.Remote, listing: &listingCache{}, fleets: &fleets{dial: o.Fleet}}
	if s.events, err = newEvents(root); err != nil {
		return nil, err
	}
	s.attempts = newAttemptCache(s.events.storeOf)
	s.routes()
	return s, nil
}

// NewToken is 128 random bits, in hex.
func NewToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Token is the token a POST must carry in X-Pipeline-Token.
func (s *Server) Token() string { return s.token }

// Root is the folder served.
func (s *Server) Root() string { return s.root }

// Close stops following the stores; open event streams end.
func (s *Server) Close() error {
	s.fleets.close()
	return s.events.close()
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.page("sessions.html"))
	s.mux.HandleFunc("GET /session/{id}", s.page("session.html"))
	s.mux.HandleFunc("GET /diff", s.page("diff.html"))
	s.mux.HandleFunc("GET /analytics", s.page("analytics.html"))
	s.mux.HandleFunc("GET /api/sessions", s.listSessions)
	s.mux.HandleFunc("GET /api/list", s.listPage)
	s.mux.HandleFunc("GET /api/sessions/{id}/timeline", s.sessionTimeline)
	s.mux.HandleFunc("GET /api/sessions/{id}", s.sessionStatus)
	s.mux.HandleFunc("GET /api/sessions/{id}/logs", s.sessionLogs)
	s.mux.HandleFunc("GET /api/sessions/{id}/memory", s.sessionMemory)
	s.mux.HandleFunc("GET /api/sessions/{id}/resume-context", s.sessionResumeContext)
	s.mux.HandleFunc("GET /api/search", s.search)
	s.mux.HandleFunc("GET /api/diff", s.diffSessions)
	s.mux.HandleFunc("GET /api/analytics", s.analyticsOf)
	s.mux.HandleFunc("GET /api/events", s.streamEvents)
	s.mux.HandleFunc("POST /api/sessions/{id}/{action}", s.act)
}

// ServeHTTP checks who asks, then serves.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.remote && !loopbackHost(r.Host) {
		// A page of another site that resolved its name to 127.0.0.1
		// (DNS rebinding) would otherwise read the API.
		writeError(w, http.StatusForbidden, "refused: this dashboard answers to a loopback address only (127.0.0.1, localhost, [::1])")
		return
	}
	if s.accessToken != "" && !s.allowed(w, r) {
		writeError(w, http.StatusUnauthorized, "refused: this dashboard needs its access token: open the URL it printed (…/?token=TOKEN), or send Authorization: Bearer TOKEN")
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

// allowed checks the access token, and keeps it in a cookie when it came
// in the URL.
func (s *Server) allowed(w http.ResponseWriter, r *http.Request) bool {
	if q := r.URL.Query().Get("token"); q != "" && sameString(q, s.accessToken) {
		http.SetCookie(w, &http.Cookie{Name: accessCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		return true
	}
	if c, err := r.Cookie(accessCookie); err == nil && sameString(c.Value, s.accessToken) {
		return true
	}
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && sameString(bearer, s.accessToken)
}

// crossSite says why a POST is refused, or "": it must carry the token
// and, when the browser says where it comes from, come from this server.
func (s *Server) crossSite(r *http.Request) string {
	if !sameString(r.Header.Get(TokenHeader), s.token) {
		return "refused: the request does not carry this dashboard's token (" + TokenHeader + "); act from its pages"
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host && origin != "https://"+r.Host {
		return fmt.Sprintf("refused: a request from %s, not from this dashboard (http://%s)", origin, r.Host)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "refused: a cross-site request (Sec-Fetch-Site: " + site + ")"
	}
	return ""
}

func sameString(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// loopbackHost tells whether a Host header names this machine's loopback.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// page serves an HTML page with the server's token in it.
func (s *Server) page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := assets.ReadFile("assets/" + name)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte(strings.ReplaceAll(string(body), "{{TOKEN}}", s.token)))
	}
}
