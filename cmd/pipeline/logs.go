package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
)

func logsCommand() *cobra.Command {
	var (
		flags   *storeFlags
		output  *outputFlag
		phase   string
		follow  bool
		prompts bool
		bf      *backendFlags
	)
	cmd := newCommand(&cobra.Command{
		Use:   "logs [SESSION]",
		Short: "Print the transcripts of a session",
		Long: `Print the transcripts of SESSION (or of the latest session of the pipeline
and spec), phase by phase, attempt by attempt, each headed by its file.
--phase keeps one phase. -f keeps printing what the steps write until the
session stops running. --prompts prints, before each agent step's
transcript, the prompt it was sent as it was sent (the resume context
included), headed by its file (<attempt>-<step>.prompt).`,
		Example: `  pipeline logs
  pipeline logs 20261125-093000123-a1b2c3 --phase implementation
  pipeline logs --prompts --phase design
  pipeline logs -f`,
		Args: cobra.MaximumNArgs(1),
	}, func(cmd *cobra.Command, args []string) error {
		if err := output.check(); err != nil {
			return err
		}
		id := ""
		if len(args) == 1 {
			id = args[0]
		}
		fl, err := bf.resolve(flags.file, nil)
		if err != nil {
			return err
		}
		if fl != nil {
			if err := refuseOnFleet(cmd, "state-dir", "follow"); err != nil {
				return err
			}
			return fleetLogs(cmd, fl, flags, id, phase, output.json(), prompts)
		}
		f, err := findSession(flags, id)
		if err != nil {
			return err
		}
		defer f.Close()
		order := map[string]int{}
		for i, p := range f.Plan.Phases {
			order[p.Name] = i
		}
		if phase != "" {
			if _, ok := order[phase]; !ok {
				return usagef("--phase %q is not a phase of %s (%s)", phase, f.X.Meta.File, session.PhaseNames(f.Plan))
			}
		}
		root := filepath.Join(f.X.Dir, "transcripts")
		t := &tail{w: termsafe.Output(cmd.OutOrStdout()), offsets: map[string]int64{}, json: output.json(), prompts: prompts}
		if err := t.catchUp(root, phase, order); err != nil {
			return err
		}
		if !follow || !f.Running() {
			return nil
		}
		return t.follow(root, phase, order, f.Running)
	})
	flags = addStoreFlags(cmd, true)
	output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&phase, "phase", "", "only this phase")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the session stops running")
	cmd.Flags().BoolVar(&prompts, "prompts", false, "print the prompt each agent step was sent (the resume context included) before its transcript")
	bf = addBackendFlags(cmd)
	return cmd
}

// tail prints transcripts from where it last stopped in each; as JSON,
// one object per piece read: {"transcript": "phase/1-step.log", "text": ...},
// or {"prompt": "phase/1-step.prompt", "text": ...} with --prompts.
type tail struct {
	w       io.Writer
	offsets map[string]int64
	last    string
	json    bool
	prompts bool
}

// transcripts lists the transcript files in phase order, then attempt.
func transcripts(root, phase string, order map[string]int) []string {
	return stepFiles(root, phase, order, false)
}

// stepFiles lists the transcript files, and with prompts the prompt
// files, in phase order, then attempt, then step, a step's prompt before
// its transcript.
func stepFiles(root, phase string, order map[string]int, prompts bool) []string {
	paths, _ := filepath.Glob(filepath.Join(root, "*", "*.log"))
	if prompts {
		more, _ := filepath.Glob(filepath.Join(root, "*", "*"+store.PromptExt))
		paths = append(paths, more...)
	}
	var out []string
	for _, p := range paths {
		if phase == "" || filepath.Base(filepath.Dir(p)) == phase {
			out = append(out, p)
		}
	}
	attempt := func(p string) int {
		n, _ := strconv.Atoi(strings.SplitN(filepath.Base(p), "-", 2)[0])
		return n
	}
	sort.SliceStable(out, func(i, j int) bool {
		pi, pj := order[filepath.Base(filepath.Dir(out[i]))], order[filepath.Base(filepath.Dir(out[j]))]
		if pi != pj {
			return pi < pj
		}
		if ai, aj := attempt(out[i]), attempt(out[j]); ai != aj {
			return ai < aj
		}
		si, sj := strings.TrimSuffix(out[i], filepath.Ext(out[i])), strings.TrimSuffix(out[j], filepath.Ext(out[j]))
		if si != sj {
			return si < sj
		}
		return filepath.Ext(out[i]) == store.PromptExt
	})
	return out
}

func (t *tail) catchUp(root, phase string, order map[string]int) error {
	for _, p := range stepFiles(root, phase, order, t.prompts) {
		if err := t.print(root, p); err != nil {
			return err
		}
	}
	return nil
}

// print writes what path has beyond what was printed of it.
func (t *tail) print(root, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(t.offsets[path], io.SeekStart); err != nil {
		return err
	}
	rel, _ := filepath.Rel(root, path)
	if t.json {
		text, err := io.ReadAll(f)
		if err != nil || len(text) == 0 {
			return err
		}
		t.offsets[path] += int64(len(text))
		key := "transcript"
		if filepath.Ext(path) == store.PromptExt {
			key = "prompt"
		}
		return writeJSONLine(t.w, map[string]string{key: rel, "text": string(text)})
	}
	if t.last != path {
		if info, err := f.Stat(); err == nil && info.Size() > t.offsets[path] {
			fmt.Fprintf(t.w, "==> %s <==\n", rel)
			t.last = path
		}
	}
	n, err := io.Copy(t.w, f)
	t.offsets[path] += n
	return err
}

// follow prints new output as fsnotify reports writes, until running says
// the session stopped.
func (t *tail) follow(root, phase string, order map[string]int, running func() bool) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(root); err != nil {
		return err
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*"))
	for _, d := range dirs {
		w.Add(d)
	}
	check := time.NewTicker(500 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case ev := <-w.Events:
			if info, err := os.Stat(ev.Name); err == nil && info.IsDir() {
				w.Add(ev.Name)
				continue
			}
			if strings.HasSuffix(ev.Name, ".log") || (t.prompts && strings.HasSuffix(ev.Name, store.PromptExt)) {
				if err := t.catchUp(root, phase, order); err != nil {
					return err
				}
			}
		case err := <-w.Errors:
			return err
		case <-check.C:
			// The runner's end is not a file event: look at its lock.
			if !running() {
				return t.catchUp(root, phase, order)
			}
		}
	}
}
