package steps_test

import (
	"slices"
	"testing"

	"github.com/pipeline-dev/pipeline/steps"
)

// A read-only request adds the CLI's read-only flag after the agent's
// args and drops the args that would lift it; the prompt after -- is
// left alone.
func TestReadOnlyArgs(t *testing.T) {
	for _, tc := range []struct {
		kind string
		args []string
		want []string // the arguments after the adapter's own, before the prompt
	}{
		{"claude", []string{"--permission-mode", "acceptEdits", "--max-turns", "3"},
			[]string{"--max-turns", "3", "--permission-mode", "plan"}},
		{"claude", []string{"--permission-mode=bypassPermissions", "--dangerously-skip-permissions"},
			[]string{"--permission-mode", "plan"}},
		{"codex", []string{"--sandbox", "danger-full-access", "-s", "workspace-write", "--dangerously-bypass-approvals-and-sandbox", "--ephemeral"},
			[]string{"--ephemeral", "--sandbox", "read-only"}},
		{"gemini", []string{"--yolo", "--approval-mode=auto_edit", "--debug"},
			[]string{"--debug", "--approval-mode", "plan"}},
	} {
		adapter, err := steps.AdapterFor(tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		base, err := adapter.Prepare(steps.Request{Kind: tc.kind, Prompt: "--look"})
		if err != nil {
			t.Fatal(err)
		}
		turn, err := adapter.Prepare(steps.Request{Kind: tc.kind, Prompt: "--look", Args: tc.args, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		// The base turn's arguments, with want where the args go.
		split := len(base.Args)
		if i := slices.Index(base.Args, "--"); i >= 0 {
			split = i
		}
		want := append(append(slices.Clone(base.Args[:split]), tc.want...), base.Args[split:]...)
		if !slices.Equal(turn.Args, want) {
			t.Errorf("%s %q read-only:\n got %q\nwant %q", tc.kind, tc.args, turn.Args, want)
		}
	}
}
