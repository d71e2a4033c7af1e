//go:build temporal

package main

import (
	"errors"
	"github.com/pipeline-dev/pipeline/internal/render"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app/appsearch"
	"github.com/pipeline-dev/pipeline/engine/search"
	"github.com/pipeline-dev/pipeline/internal/render/hits"
)

// searchOptions are search's flags.
type searchOptions struct {
	flags        *storeFlags
	output       *outputFlag
	sessionID    string
	phase, since string
	limit        int
}

func searchCommand() *cobra.Command {
	o := &searchOptions{}
	cmd := newCommand(&cobra.Command{
		Use:     "search QUERY...",
		Short:   searchShort,
		Long:    helpText("search"),
		Example: helpText("search.example"),
		Args:    cobra.ArbitraryArgs,
	}, o.run)
	o.flags = addStoreFlags(cmd, false)
	o.output = addOutputFlag(cmd)
	cmd.Flags().StringVar(&o.sessionID, "session", "", "only this session (its id, or a unique start or end of it)")
	cmd.Flags().StringVar(&o.phase, "phase", "", "only this phase")
	cmd.Flags().StringVar(&o.since, "since", "", "only what was written since: a duration back from now (2h, 3d, 1d12h) or a date (2026-11-20, or RFC 3339)")
	cmd.Flags().IntVar(&o.limit, "limit", search.DefaultLimit, "the number of hits at most")
	cmd.RegisterFlagCompletionFunc("session", completeSessions)
	return cmd
}

func (o *searchOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.check(); err != nil {
		return err
	}
	text := strings.Join(args, " ")
	if strings.TrimSpace(text) == "" {
		return usagef("search needs a QUERY: the words to look for, e.g. pipeline search flaky test")
	}
	if o.limit < 1 {
		return usagef("--limit must be 1 or more, not %d", o.limit)
	}
	req := appsearch.SearchRequest{Pipeline: o.flags.pipeline(sayTo(cmd)), Query: text, Session: o.sessionID, Phase: o.phase, Limit: o.limit,
		Warn: cmd.ErrOrStderr()}
	if o.since != "" {
		at, err := appsearch.ParseSince(o.since, time.Now())
		if err != nil {
			return err
		}
		req.Since = at
	}
	r, err := appsearch.Search(cmd.Context(), req)
	if err != nil {
		return err
	}
	// No hit exits 1, as grep does (a script tests for a match).
	var noHits error
	if len(r.Hits) == 0 {
		noHits = &exitStatus{code: exitFailed, printed: true}
	}
	if o.output.json() {
		return errors.Join(render.JSON(cmd.OutOrStdout(), r), noHits)
	}
	hits.Write(cmd.OutOrStdout(), text, r.Hits)
	return noHits
}
