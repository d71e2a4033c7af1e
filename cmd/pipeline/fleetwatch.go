//go:build temporal

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/temporal"
)

// fleetWatch is pipeline watch on the Temporal backend: when the
// phases.yaml or the spec of a watched pipeline changes, each paused
// session of it on the fleet is resumed with the files as they are now
// (the new plan source goes with the resume signal) and the spec's diff
// in the notes. The check also runs once at the start, so that what
// changed while no watcher ran is caught up. What the local watch does
// and this does not: the watch: globs, rate limits' resume_after,
// --max-parallel and --reasons (the fleet's workers bound what runs).
func fleetWatch(cmd *cobra.Command, fl *fleet, files []string, debounce time.Duration) error {
	c, err := fl.dial(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	// The watched paths, absolute; their folders are watched (editors
	// save by renaming over the file).
	watched := map[string]string{} // path -> its phases.yaml
	for _, file := range files {
		src, _, err := fleetPlan(file, "")
		if err != nil {
			return err
		}
		for _, p := range []string{src.File, src.Spec} {
			if p == "" {
				continue
			}
			watched[p] = src.File
			if err := w.Add(filepath.Dir(p)); err != nil {
				return err
			}
		}
	}
	out := cmd.OutOrStdout()
	say := func(format string, args ...any) {
		printError(out, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...)+"\n")
	}
	check := func(file string) {
		if err := fleetResumeChanged(cmd.Context(), c, file, say); err != nil {
			say("%s: %v", file, err)
		}
	}
	for _, file := range uniqueValues(watched) {
		check(file)
	}
	say("watching: %d pipeline(s) on the Temporal fleet (%s); a change to a spec or phases.yaml resumes its paused sessions (Ctrl+C to stop)", len(files), fl.where())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	pending := map[string]bool{}
	var quiet <-chan time.Time
	for {
		select {
		case ev := <-w.Events:
			if file, ok := watched[ev.Name]; ok {
				pending[file] = true
				quiet = time.After(debounce)
			}
		case err := <-w.Errors:
			return err
		case <-quiet:
			for file := range pending {
				check(file)
			}
			pending = map[string]bool{}
		case <-stop:
			fmt.Fprintln(cmd.ErrOrStderr(), "pipeline watch: stopped; the sessions on the fleet go on as they were")
			return nil
		}
	}
}

func uniqueValues(m map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range m {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// fleetResumeChanged resumes the paused sessions of the pipeline at file
// whose plan source is not the files as they are now.
func fleetResumeChanged(ctx context.Context, c *temporal.Client, file string, say func(string, ...any)) error {
	src, key, err := fleetPlan(file, "")
	if err != nil {
		say("%s: invalid, not applied:\n%v", file, err)
		return nil
	}
	live, err := c.Live(ctx, key)
	if err != nil {
		return err
	}
	for _, s := range live {
		r, err := c.Status(ctx, s.ID)
		if err != nil {
			return err
		}
		if r.Status != string(engine.StatusPaused) {
			continue
		}
		h, err := c.History(ctx, s.ID)
		if err != nil {
			return err
		}
		old := h.Plan
		if bytes.Equal(old.YAML, src.YAML) && bytes.Equal(old.SpecText, src.SpecText) {
			continue
		}
		var notes string
		if diff := engine.SpecDiff(filepath.Base(src.Spec), string(old.SpecText), string(src.SpecText)); src.Spec != "" && diff != "" {
			notes = "The spec changed while the session was paused:\n" + diff
		} else if !bytes.Equal(old.YAML, src.YAML) {
			notes = "phases.yaml changed while the session was paused."
		}
		if err := fleetSignalResume(ctx, c, s.ID, notes, "", &src, true); err != nil {
			say("%s: session %s skipped: %v", file, s.ID, err)
			continue
		}
		say("%s changed: session %s resumed (it was paused: %s)", file, s.ID, r.PauseReason)
	}
	return nil
}
