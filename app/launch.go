package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/engine/watch"
)

// LaunchWait bounds how long LaunchRunner waits for the runner to take
// its session, and SettleRunner for a runner on its way out.
const LaunchWait = 15 * time.Second

// LaunchRequest is a pipeline command (run or resume) to start as a
// detached runner: one that outlives whoever asked (the MCP server's
// tools, the dashboard's buttons).
type LaunchRequest struct {
	// Store is the store the runner's session is in; Key the session's
	// lock key there.
	Store *store.Store
	Key   string
	// Binary is the pipeline binary, run in Dir with Args (-o json is
	// added) and Env.
	Binary string
	Dir    string
	Args   []string
	Env    []string
	// Folder is the folder of the store that keeps the runner's output.
	Folder string
}

// Launched is a runner started, and its session as it stood when
// LaunchRunner returned.
type Launched struct {
	Session string
	// Status: running, or already paused, completed or failed.
	Status string
	PID    int
	// Log is the runner's standard error (what pipeline run shows), JSON
	// its standard output (-o json), files under the store.
	Log, JSON string
	// ExitCode is the runner's, when it ended before LaunchRunner returned.
	ExitCode *int
	// Watcher: a pipeline watch holds the store.
	Watcher bool
}

// RunnerFailedError is a runner that ended before it held a session.
type RunnerFailedError struct {
	Code          int
	JSONPath, Log string
}

// Error is the runner's own error when it printed one (-o json), else
// where its output is.
func (e *RunnerFailedError) Error() string {
	var report ErrorReport
	if content, err := os.ReadFile(e.JSONPath); err == nil && json.Unmarshal(content, &report) == nil && report.Error != "" {
		return report.Error
	}
	return fmt.Sprintf("the runner ended with exit code %d before it held a session; its output: %s", e.Code, e.Log)
}

// ExitCode is the runner's.
func (e *RunnerFailedError) ExitCode() int { return e.Code }

// LaunchRunner starts the pipeline binary as a runner of its own: a new
// session (setsid) and so a process group of its own, standard input
// empty, its output in files under the store, not a child the caller
// waits for. It returns once the runner holds the session of req.Key, or
// has ended, or LaunchWait passed. The runner is reaped when it ends;
// should the caller end first, the runner goes on.
func LaunchRunner(ctx context.Context, req LaunchRequest) (Launched, error) {
	var out Launched
	st := req.Store
	logFile, jsonFile, err := runnerOutput(st, req.Folder, &out)
	if err != nil {
		return out, err
	}
	defer logFile.Close()
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

	cmd := exec.Command(req.Binary, append(req.Args, "-o", "json")...)
	cmd.Dir, cmd.Env = req.Dir, req.Env
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
	found := runnerFound(st, req.Key, out.PID, before)
	if err := awaitRunner(ctx, w, exited, found, &out); err != nil {
		return out, err
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
		out.Status = StatusOfExit(*out.ExitCode)
	}
	return out, nil
}

// runnerOutput makes the files of the runner's standard error (out.Log)
// and output (out.JSON), new ones in the store's folder.
func runnerOutput(st *store.Store, folder string, out *Launched) (logFile, jsonFile *os.File, err error) {
	runs := filepath.Join(st.Root, folder)
	if err := os.MkdirAll(runs, 0o700); err != nil {
		return nil, nil, err
	}
	name := time.Now().UTC().Format("20060102-150405.000000000")
	out.Log, out.JSON = filepath.Join(runs, name+".log"), filepath.Join(runs, name+".json")
	if logFile, err = os.OpenFile(out.Log, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err != nil {
		return nil, nil, err
	}
	if jsonFile, err = os.OpenFile(out.JSON, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err != nil {
		logFile.Close()
		return nil, nil, err
	}
	return logFile, jsonFile, nil
}

// runnerFound tells which session the runner pid took: the one whose lock
// it holds, or the one whose index line is newer than its start.
func runnerFound(st *store.Store, key string, pid int, before time.Time) func() (id, status string) {
	return func() (string, string) {
		if h, err := st.Holder(key); err == nil && h.PID == pid && h.Session != "" && st.Held(key) {
			return h.Session, string(engine.StatusRunning)
		}
		if last, err := session.Latest(st, key); err == nil && last != nil && !last.Updated.Before(before) {
			return last.ID, last.Status
		}
		return "", ""
	}
}

// awaitRunner waits, on each change of the store, for found to name the
// runner's session, and sets it in out.
func awaitRunner(ctx context.Context, w *fsnotify.Watcher, exited <-chan int, found func() (string, string), out *Launched) error {
	timeout := time.NewTimer(LaunchWait)
	defer timeout.Stop()
	for {
		if id, status := found(); id != "" {
			out.Session, out.Status = id, status
			return nil
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			return err
		case code := <-exited:
			id, status := found()
			if id == "" || code == ExitUsage {
				return &RunnerFailedError{Code: code, JSONPath: out.JSON, Log: out.Log}
			}
			out.Session, out.Status, out.ExitCode = id, status, &code
			return nil
		case <-timeout.C:
			return fmt.Errorf("the runner (pid %d) started but held no session after %s; its output: %s", out.PID, LaunchWait, out.Log)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// SettleRunner waits for a runner that paused or ended its session but is
// still closing it (hooks, the last writes) to let it go, up to
// LaunchWait: what comes next (a resume, notes, a pin) is then the
// session's, not left for a runner on its way out. A session that runs is
// left alone.
func SettleRunner(st *store.Store, key string) {
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
	// comes next waits for the lock, up to LaunchWait, rather than be
	// refused as "already running".
	st.WaitReleased(key, LaunchWait)
}

// StatusOfExit is the status a runner's exit code says.
func StatusOfExit(code int) string {
	switch code {
	case ExitCompleted:
		return string(engine.StatusCompleted)
	case ExitPaused:
		return string(engine.StatusPaused)
	}
	return string(engine.StatusFailed)
}

// CommandArgs are the folder to run a command in and the arguments that
// name the pipeline of a session (its phases.yaml, file, kept in the store
// storeDir) to it there.
func CommandArgs(storeDir, file string) (dir string, args []string) {
	dir = filepath.Dir(file)
	if base := filepath.Base(file); base != DefaultFile {
		args = append(args, "--file="+base)
	}
	if os.Getenv("PIPELINE_STATE_DIR") == "" && filepath.Clean(storeDir) != filepath.Join(dir, ".pipeline") {
		args = append(args, "--state-dir="+storeDir)
	}
	return dir, args
}

// RunnerEnv is this process's environment for a detached runner, without
// what would make it print for a CI job.
func RunnerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains([]string{"CI", "GITHUB_ACTIONS", "GITLAB_CI", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"}, name) {
			env = append(env, kv)
		}
	}
	return env
}
