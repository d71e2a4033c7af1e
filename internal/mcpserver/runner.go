package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
)

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

// launch starts this binary with args in dir as a detached runner
// (app.LaunchRunner), its output under the store's runsFolder, and says
// what to call next.
func (s *Server) launch(ctx context.Context, st *store.Store, key, dir string, args []string) (Started, error) {
	l, err := app.LaunchRunner(ctx, app.LaunchRequest{Store: st, Key: key, Binary: s.binary, Dir: dir, Args: args, Env: s.env, Folder: runsFolder})
	out := Started{Session: l.Session, Status: l.Status, PID: l.PID, Log: l.Log, ExitCode: l.ExitCode, Watcher: l.Watcher}
	var failed *app.RunnerFailedError
	if errors.As(err, &failed) {
		return out, runnerFailed(failed.Code, failed.JSONPath, failed.Log)
	}
	if err != nil {
		return out, err
	}
	out.Next = fmt.Sprintf("call status with {\"session\": %q} (or subscribe to pipeline://sessions/%s) until it pauses or completes", out.Session, out.Session)
	if out.Watcher {
		out.Next += "; a pipeline watch holds this store: it follows the session and resumes it when its spec changes"
	}
	return out, nil
}

// settle waits for a runner on its way out (app.SettleRunner).
func settle(st *store.Store, key string) { app.SettleRunner(st, key) }
