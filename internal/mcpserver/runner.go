package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/engine/watch"
)

// startWait bounds how long run and resume wait for the runner to take
// its session.
const startWait = 15 * time.Second

// runsFolder is where the runners' output goes, in the store's folder.
const runsFolder = "mcp-runs"

func (s *Server) run(ctx context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, Started, error) {
	var out Started
	path, specPath, err := s.root.pipeline(in.Pipeline)
	if err != nil {
		return nil, out, err
	}
	dir, err := s.root.storeDir(path)
	if err != nil {
		return nil, out, err
	}
	args := []string{"run", "--file=" + s.root.rel(path)}
	if specPath != "" {
		args = append(args, "--spec="+s.root.rel(specPath))
	}
	plan, err := spec.Load(path, specPath)
	if err != nil {
		return nil, out, fmt.Errorf("%s\ncall validate for every problem of the file, with its line and column", describe(err))
	}
	for _, p := range []struct{ flag, phase string }{{"from", in.From}, {"only", in.Only}} {
		if p.phase == "" {
			continue
		}
		if err := session.CheckPhase(plan, p.phase); err != nil {
			return nil, out, fmt.Errorf("%s: %v", p.flag, err)
		}
		args = append(args, "--"+p.flag+"="+p.phase)
	}
	if in.New {
		args = append(args, "--new")
	}
	st, err := store.Open(dir)
	if err != nil {
		return nil, out, err
	}
	defer st.Close()
	out, err = s.launch(ctx, st, session.KeyOf(st, path, plan), s.root.root, args)
	return nil, out, err
}

func (s *Server) resume(ctx context.Context, _ *mcp.CallToolRequest, in ResumeInput) (*mcp.CallToolResult, Started, error) {
	var out Started
	var (
		dir, key string
		args     []string
		st       *store.Store
		err      error
	)
	if in.Session != "" {
		f, err := s.root.session(in.Session, in.File)
		if err != nil {
			return nil, out, err
		}
		if st, err = store.OpenExisting(f.store); err != nil {
			return nil, out, err
		}
		dir, args = s.pipelineArgs(f)
		args, key = append([]string{"resume", f.meta.ID}, args...), f.meta.Key
		// Checked here: the runner would take the session first, and
		// report after the tool returned.
		ref, err := session.Find(st, session.Options{ID: f.meta.ID})
		if err != nil {
			st.Close()
			return nil, out, err
		}
		state, _, err := ref.State()
		if err == nil && in.Phase != "" {
			if err = session.CheckPhase(ref.Plan, in.Phase); err != nil {
				err = fmt.Errorf("phase: %v", err)
			}
		}
		if err == nil && state.Status == engine.StatusCompleted {
			err = fmt.Errorf("session %s is completed: there is nothing to resume; call run with {\"new\": true} for a new session", f.meta.ID)
		}
		ref.Close()
		if err != nil {
			st.Close()
			return nil, out, err
		}
	} else {
		path, specPath, err := s.root.pipeline(in.Pipeline)
		if err != nil {
			return nil, out, err
		}
		storeDir, err := s.root.storeDir(path)
		if err != nil {
			return nil, out, err
		}
		plan, err := spec.Load(path, specPath)
		if err != nil {
			return nil, out, fmt.Errorf("%s\ncall validate for every problem of the file", describe(err))
		}
		if st, err = store.OpenExisting(storeDir); err != nil {
			return nil, out, fmt.Errorf("no sessions of %s yet: call run to start one", s.root.rel(path))
		}
		if err := session.CheckPhase(plan, in.Phase); err != nil {
			st.Close()
			return nil, out, fmt.Errorf("phase: %v", err)
		}
		dir, args, key = s.root.root, []string{"resume", "--file=" + s.root.rel(path)}, session.KeyOf(st, path, plan)
		if specPath != "" {
			args = append(args, "--spec="+s.root.rel(specPath))
		}
	}
	defer st.Close()
	settle(st, key)
	if in.Notes != "" {
		args = append(args, "--notes="+in.Notes)
	}
	if in.Phase != "" {
		args = append(args, "--phase="+in.Phase)
	}
	out, err = s.launch(ctx, st, key, dir, args)
	return nil, out, err
}

// describe is a spec error with every problem at its place.
func describe(err error) string {
	var specErr *spec.Error
	if !errors.As(err, &specErr) {
		return err.Error()
	}
	var b strings.Builder
	for i, p := range specErr.Problems {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s: %s", p.Position, p.Message)
		if p.Hint != "" {
			b.WriteString(" (" + p.Hint + ")")
		}
	}
	return b.String()
}

// launch starts this binary with args in dir as a runner of its own: a
// new session (setsid) and so a process group of its own, standard input
// empty, its output in files under the store, not a child the server
// waits for to answer. It returns once the runner holds the session of
// key, or has ended, or startWait passed. The server reaps it when it
// ends; should the server end first, the runner goes on.
func (s *Server) launch(ctx context.Context, st *store.Store, key, dir string, args []string) (Started, error) {
	var out Started
	runs := filepath.Join(st.Root, runsFolder)
	if err := os.MkdirAll(runs, 0o700); err != nil {
		return out, err
	}
	name := time.Now().UTC().Format("20060102-150405.000000000")
	out.Log = filepath.Join(runs, name+".log")
	logFile, err := os.OpenFile(out.Log, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return out, err
	}
	defer logFile.Close()
	jsonPath := filepath.Join(runs, name+".json")
	jsonFile, err := os.OpenFile(jsonPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return out, err
	}
	defer jsonFile.Close()

	// Watched before the runner starts: no change is missed.
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return out, err
	}
	defer w.Close()
	locks := filepath.Join(st.Root, "locks")
	os.MkdirAll(locks, 0o700)
	for _, d := range []string{st.Root, locks} {
		if err := w.Add(d); err != nil {
			return out, err
		}
	}
	out.Watcher = st.Held(watch.LockKey)
	before := time.Now()

	cmd := exec.Command(s.binary, append(args, "-o", "json")...)
	cmd.Dir, cmd.Env = dir, s.env
	cmd.Stdout, cmd.Stderr = jsonFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return out, fmt.Errorf("starting the runner: %w", err)
	}
	out.PID = cmd.Process.Pid
	exited := make(chan int, 1)
	go func() {
		cmd.Wait()
		exited <- cmd.ProcessState.ExitCode()
	}()

	// found: the runner holds the session's lock, or the session's index
	// line is newer than the start.
	found := func() (string, string) {
		if h, err := st.Holder(key); err == nil && h.PID == out.PID && h.Session != "" && st.Held(key) {
			return h.Session, string(engine.StatusRunning)
		}
		if last, err := session.Latest(st, key); err == nil && last != nil && !last.Updated.Before(before) {
			return last.ID, last.Status
		}
		return "", ""
	}
	timeout := time.NewTimer(startWait)
	defer timeout.Stop()
	for {
		if id, status := found(); id != "" {
			out.Session, out.Status = id, status
			break
		}
		select {
		case <-w.Events:
			continue
		case err := <-w.Errors:
			return out, err
		case code := <-exited:
			id, status := found()
			if id == "" || code == 2 {
				return out, runnerFailed(code, jsonPath, out.Log)
			}
			out.Session, out.Status, out.ExitCode = id, status, &code
		case <-timeout.C:
			return out, fmt.Errorf("the runner (pid %d) started but held no session after %s; its output: %s", out.PID, startWait, out.Log)
		case <-ctx.Done():
			return out, ctx.Err()
		}
		break
	}
	// A runner that ended already says how.
	select {
	case code := <-exited:
		out.ExitCode = &code
		if id, status := found(); id == out.Session {
			out.Status = status
		}
	default:
	}
	if out.ExitCode != nil && out.Status == string(engine.StatusRunning) {
		out.Status = statusOfExit(*out.ExitCode)
	}
	out.Next = fmt.Sprintf("call status with {\"session\": %q} (or subscribe to pipeline://sessions/%s) until it pauses or completes", out.Session, out.Session)
	if out.Watcher {
		out.Next += "; a pipeline watch holds this store: it follows the session and resumes it when its spec changes"
	}
	return out, nil
}

// settle waits for a runner that paused or ended its session but is
// still closing it (hooks, the last writes) to let it go, up to
// startWait: what comes next (a resume, notes, a pin) is then the
// session's, not left for a runner on its way out. A session that runs is
// left alone.
func settle(st *store.Store, key string) {
	if !st.Held(key) {
		return
	}
	last, err := session.Latest(st, key)
	if err != nil || last == nil {
		return
	}
	if last.Status == string(engine.StatusRunning) {
		// The index is written after the log: the session's own state
		// says whether it has stopped already.
		ref, err := session.Find(st, session.Options{ID: last.ID})
		if err != nil {
			return
		}
		state, _, err := ref.State()
		ref.Close()
		if err != nil || state.Status == engine.StatusRunning {
			return
		}
	}
	// The holder of a session that stopped is on its way out (hooks,
	// the last writes), or has just taken it and not yet said so: what
	// comes next waits for the lock, up to startWait, rather than be
	// refused as "already running".
	st.WaitReleased(key, startWait)
}

func statusOfExit(code int) string {
	switch code {
	case 0:
		return string(engine.StatusCompleted)
	case 3:
		return string(engine.StatusPaused)
	}
	return string(engine.StatusFailed)
}
