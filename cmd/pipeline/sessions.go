package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/termview"
	"github.com/pipeline-dev/pipeline/triggers"
)

func sessionsCommand() *cobra.Command {
	var (
		flags    *storeFlags
		output   *outputFlag
		active   bool
		all      bool
		specPath string
		status   string
		bf       *backendFlags
	)
	cmd := newCommand(&cobra.Command{
		Use:   "sessions",
		Short: "List the sessions kept beside phases.yaml",
		Long: `List the sessions of the store (.pipeline beside phases.yaml, or
--state-dir), newest first. --active keeps those not finished (running or
paused); --status keeps one status; --spec keeps the sessions of one spec.
--all lists the sessions of every pipeline below the current folder (the
.pipeline folders found there, .git and node_modules skipped, at most
` + fmt.Sprint(maxStoreDepth) + ` folders deep), with the phases.yaml of each.

A spec named README.md (or index.md), as LeanSpec names every spec, is
shown with its folder: 045-dashboard/README.md.`,
		Example: `  pipeline sessions
  pipeline sessions --active
  pipeline sessions --all --active
  pipeline sessions --status paused -o json`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (err error) {
		if err := output.check(); err != nil {
			return err
		}
		if all && (cmd.Flags().Changed("file") || cmd.Flags().Changed("state-dir")) {
			return usagef("--all finds the stores below the current folder: it cannot go with --file or --state-dir")
		}
		fl, err := bf.resolve(flags.file, nil)
		if err != nil {
			return err
		}
		var out []sessionLine
		none := ""
		if fl != nil {
			if err := refuseOnFleet(cmd, "state-dir", "all"); err != nil {
				return err
			}
			if status != "" && !slices.Contains(app.Statuses, status) {
				return usagef("--status must be running, paused, completed or failed, not %q", status)
			}
			var total int
			if out, total, err = fleetSessions(cmd, fl, active, status, specPath); err != nil {
				return err
			}
			none = (&app.SessionsResponse{Sessions: out, Total: total}).NoneMatch(false, "pipeline run"+fileArg(cmd))
		}
		if fl == nil {
			r, err := app.Sessions(cmd.Context(), app.SessionsRequest{Pipeline: flags.pipeline(nil), All: all,
				Active: active, Status: status, Spec: specPath, Forks: !all})
			if err != nil {
				return err
			}
			out, none = r.Sessions, r.NoneMatch(all, "pipeline run"+fileArg(cmd))
		}
		if output.json() {
			return writeJSON(cmd.OutOrStdout(), out)
		}
		var b bytes.Buffer
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		safe := termview.NewScreenText().Line // names and reasons came from files
		header := "SESSION\tPIPELINE\tSPEC\tSTATUS\tPHASE\tTOKENS\tCOST\tUPDATED"
		if all {
			header += "\tFILE"
		}
		fmt.Fprintln(tw, header)
		for _, s := range out {
			state := s.Status
			if s.PauseReason != "" {
				state += " (" + s.PauseReason + ")"
			}
			if s.Queued {
				state += ", queued"
			}
			if s.ReplayOf != "" {
				state += ", replay of " + s.ReplayOf
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t$%.4f\t%s", safe(s.ID), safe(s.Pipeline), safe(specLabel(s.Spec)), safe(state),
				safe(orDash(s.Phase)), s.Tokens, s.CostUSD, s.Updated.Local().Format("2006-01-02 15:04"))
			if all {
				fmt.Fprintf(tw, "\t%s", safe(relativeToHere(s.File)))
			}
			fmt.Fprintln(tw)
			for _, f := range s.Forks {
				fmt.Fprintf(tw, "  └ fork %s\t(at %s)\t%s\t%s\t%s\t\t\t\n", safe(f.ID), safe(f.At), safe(f.Dir), safe(f.Status), safe(orDash(f.Phase)))
			}
		}
		tw.Flush()
		if len(out) == 0 && none == "" {
			none = fmt.Sprintf("no sessions yet; start one with: pipeline run%s\n", fileArg(cmd))
		}
		b.WriteString(none)
		_, err = cmd.OutOrStdout().Write(b.Bytes())
		return err
	})
	flags = addStoreFlags(cmd, false)
	output = addOutputFlag(cmd)
	cmd.Flags().BoolVar(&active, "active", false, "only sessions not finished: running or paused")
	cmd.Flags().BoolVar(&all, "all", false, "the sessions of every pipeline below the current folder")
	cmd.Flags().StringVar(&specPath, "spec", "", "only the sessions of this spec")
	cmd.Flags().StringVar(&status, "status", "", "only sessions with this status: running, paused, completed or failed")
	bf = addBackendFlags(cmd)
	return cmd
}

// sessionLine is a session as pipeline sessions shows it.
type sessionLine = app.SessionLine

func orDash(s string) string {
	if s == "" || s == "." {
		return "-"
	}
	return s
}

func cleanCommand() *cobra.Command {
	var (
		flags     *storeFlags
		output    *outputFlag
		olderThan string
		keep      int
		dryRun    bool
	)
	cmd := newCommand(&cobra.Command{
		Use:   "clean",
		Short: "Delete old finished sessions",
		Long: `Delete the completed and failed sessions not updated for --older-than,
keeping the newest --keep sessions of each pipeline and spec whatever their
age. Running and paused sessions are never deleted.`,
		Example: `  pipeline clean --older-than 7d
  pipeline clean --older-than 30d --keep 1 --dry-run`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) error {
		if err := output.check(); err != nil {
			return err
		}
		age, err := parseAge(olderThan)
		if err != nil {
			return err
		}
		st, err := flags.open()
		if err != nil {
			return err
		}
		list, err := st.List()
		if err != nil {
			return err
		}
		cutoff := time.Now().Add(-age)
		seen := map[string]int{}
		removed := []string{}
		for _, s := range list { // newest first
			seen[s.Key]++
			finished := s.Status == string(engine.StatusCompleted) || s.Status == string(engine.StatusFailed)
			if !finished || seen[s.Key] <= keep || s.Updated.After(cutoff) {
				continue
			}
			if !dryRun {
				err := st.Remove(s.ID)
				if errors.Is(err, store.ErrNotFound) {
					continue // removed meanwhile, by another clean
				}
				if err != nil {
					return storeWriteFailed(err)
				}
				if err := removeCheckpoints(st, s); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "pipeline: session %s removed, its checkpoints not: %v\n", s.ID, err)
				}
			}
			removed = append(removed, s.ID)
			if !output.json() {
				verb := "removed"
				if dryRun {
					verb = "would remove"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s, %s)\n", verb, s.ID, s.Status, s.Updated.Local().Format("2006-01-02"))
			}
		}
		if len(removed) > 0 && !dryRun {
			if err := st.CompactIndex(); err != nil {
				return storeWriteFailed(err)
			}
		}
		if !dryRun {
			// Sessions whose making a crash cut short.
			if _, err := st.RemoveUnfinished(time.Hour); err != nil {
				return storeWriteFailed(err)
			}
		}
		if output.json() {
			return writeJSON(cmd.OutOrStdout(), struct {
				Removed []string `json:"removed"`
				DryRun  bool     `json:"dry_run"`
			}{removed, dryRun})
		}
		if dryRun {
			fmt.Fprintf(cmd.OutOrStdout(), "%d session(s) would be removed (--dry-run: nothing was)\n", len(removed))
		} else {
			fmt.Fprintf(cmd.OutOrStdout(), "%d session(s) removed\n", len(removed))
		}
		return nil
	})
	flags = addStoreFlags(cmd, false)
	output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&olderThan, "older-than", "", "age past which finished sessions go: 7d, 12h (required)")
	cmd.Flags().IntVar(&keep, "keep", 3, "sessions to keep for each pipeline and spec, however old")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be removed, remove nothing")
	return cmd
}

// removeCheckpoints deletes the refs under refs/pipeline/<session>/ of a
// removed session, in the git work tree of its phases.yaml.
func removeCheckpoints(st *store.Store, s store.Summary) error {
	if s.File == "" {
		return nil
	}
	git := session.GitFor(filepath.Dir(st.Abs(s.File)))
	if git == nil {
		return nil
	}
	return git.DeleteRefs(session.CheckpointRef(s.ID, ""))
}

// maxDays is the longest age clean takes, in days: a time.Duration holds
// about 292 years.
const maxDays = int64(math.MaxInt64 / int64(24*time.Hour))

// parseAge reads --older-than: days (7d), a Go duration (12h, 90m), or
// both (1d12h); more than zero, and short enough to be held at all. A
// longer one is refused rather than wrapped round to a negative age,
// which made every finished session old enough to go.
func parseAge(text string) (time.Duration, error) {
	// The durations of phases.yaml, days included, overflow refused.
	age, err := triggers.ParseDuration(text)
	if err != nil || age <= 0 {
		return 0, usagef("--older-than %q is not an age clean can use: write a duration such as 7d, 12h or 1d12h, more than zero and at most %dd", text, maxDays)
	}
	return age, nil
}

// maxStoreDepth bounds the walk of sessions --all (app.FindStores).
const maxStoreDepth = app.MaxStoreDepth

// specLabel is how sessions names a spec: its file name, or with its
// folder when the name says nothing (LeanSpec's specs are all README.md).
func specLabel(spec string) string {
	base := filepath.Base(spec)
	switch strings.ToLower(base) {
	case "readme.md", "index.md", "spec.md":
		if dir := filepath.Base(filepath.Dir(spec)); dir != "." && dir != string(filepath.Separator) {
			return dir + "/" + base
		}
	}
	return orDash(base)
}

// relativeToHere is path relative to the current folder when it is below
// it, else as it is.
func relativeToHere(path string) string {
	if wd, err := os.Getwd(); err == nil && filepath.IsAbs(path) {
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return path
}

// fileArg is the FILE a command was given with --file, as a next command
// takes it, or "" for the default.
func fileArg(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("file"); f != nil && f.Value.String() != f.DefValue {
		return " " + shellQuote(f.Value.String())
	}
	return ""
}
