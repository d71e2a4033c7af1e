//go:build temporal

package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	fleetapp "github.com/pipeline-dev/pipeline/app/fleet"
)

// fleetWatch is pipeline watch on the Temporal backend: when the
// phases.yaml or the spec of a watched pipeline changes, each paused
// session of it on the fleet is resumed with the files as they are now
// (fleet.Backend.ResumeChanged). The check also runs once at the start,
// so that what changed while no watcher ran is caught up. What the local
// watch does and this does not: the watch: globs, rate limits'
// resume_after, --max-parallel and --reasons (the fleet's workers bound
// what runs).
func fleetWatch(cmd *cobra.Command, fl *fleet, files []string, debounce time.Duration) error {
	b, err := fl.dial(cmd)
	if err != nil {
		return err
	}
	defer b.Close()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	watched, err := watchedFiles(w, files)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	say := func(format string, args ...any) {
		printError(out, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...)+"\n")
	}
	check := func(file string) {
		if err := b.ResumeChanged(cmd.Context(), file, say); err != nil {
			say("%s: %v", file, err)
		}
	}
	for _, file := range uniqueValues(watched) {
		check(file)
	}
	say("watching: %d pipeline(s) on the Temporal fleet (%s); a change to a spec or phases.yaml resumes its paused sessions (Ctrl+C to stop)", len(files), b.Where())
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

// watchedFiles watches the folders of the pipelines' phases.yaml and
// specs (editors save by renaming over the file); the map is from each
// watched path, absolute, to its phases.yaml.
func watchedFiles(w *fsnotify.Watcher, files []string) (map[string]string, error) {
	watched := map[string]string{}
	for _, file := range files {
		src, _, err := fleetapp.Plan(app.Pipeline{File: file})
		if err != nil {
			return nil, err
		}
		for _, p := range []string{src.File, src.Spec} {
			if p == "" {
				continue
			}
			watched[p] = src.File
			if err := w.Add(filepath.Dir(p)); err != nil {
				return nil, err
			}
		}
	}
	return watched, nil
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
