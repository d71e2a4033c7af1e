package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/render"
)

// addCompletions teaches the shell completion (pipeline completion bash,
// zsh, fish, powershell) the session ids, the phase names and the values
// of the flags that take a fixed few.
func addCompletions(root *cobra.Command) {
	sessionArg := map[string]bool{"status": true, "resume": true, "pause": true, "complete": true, "logs": true, "export": true,
		"replay": true, "diff": true}
	fileArg := map[string]bool{"run": true, "plan": true, "validate": true, "watch": true}
	for _, cmd := range root.Commands() {
		switch {
		case sessionArg[cmd.Name()]:
			cmd.ValidArgsFunction = completeSessions
		case fileArg[cmd.Name()]:
			cmd.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
			}
		}
		for _, name := range []string{"phase", "from", "only", "to", "at"} {
			if cmd.Flags().Lookup(name) != nil {
				cmd.RegisterFlagCompletionFunc(name, completePhases)
			}
		}
		if cmd.Flags().Lookup("agent") != nil {
			cmd.RegisterFlagCompletionFunc("agent", cobra.FixedCompletions(
				[]string{"claude", "gemini", "codex", "command"}, cobra.ShellCompDirectiveNoFileComp))
		}
		if cmd.Flags().Lookup("status") != nil {
			cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(
				[]string{"running", "paused", "completed", "failed"}, cobra.ShellCompDirectiveNoFileComp))
		}
	}
}

// completeSessions offers the ids of the store's sessions, newest first,
// each with its status and phase.
func completeSessions(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 && !(cmd.Name() == "diff" && len(args) == 1) {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	st, err := app.Pipeline{File: flagValue(cmd, "file", "phases.yaml"), StateDir: flagValue(cmd, "state-dir", "")}.Existing()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer st.Close()
	list, err := st.List()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, fmt.Sprintf("%s\t%s, %s %s", s.ID, s.Status, s.Pipeline, render.OrDash(s.Phase)))
	}
	return ids, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// completePhases offers the phases of the pipeline's plan.
func completePhases(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	file := flagValue(cmd, "file", "phases.yaml")
	if len(args) == 1 && (cmd.Name() == "run" || cmd.Name() == "plan") {
		file = args[0]
	}
	plan, err := spec.Load(file, flagValue(cmd, "spec", ""))
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, p := range plan.Phases {
		names = append(names, p.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

func flagValue(cmd *cobra.Command, name, otherwise string) string {
	if f := cmd.Flags().Lookup(name); f != nil {
		return f.Value.String()
	}
	return otherwise
}
