package main

import (
	"strings"
	"testing"
)

// The shell completion offers session ids, phase names and the values of
// -o and --status (cobra's __complete is what the shell scripts call).
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", twoPhases)
	if r := pipeline(t, dir, "run"); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	id := status(t, dir).ID
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", ""}, []string{id + "\tpaused, "}},
		{[]string{"resume", "--phase", ""}, []string{"one\n", "two\n"}},
		{[]string{"status", "-o", ""}, []string{"text\n", "json\n", "markdown\n"}},
		{[]string{"sessions", "--status", ""}, []string{"running\n", "paused\n", "completed\n", "failed\n"}},
	} {
		r := pipeline(t, dir, append([]string{"__complete"}, tc.args...)...)
		for _, want := range tc.want {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("completing %q: no %q in %q", tc.args, want, r.stdout)
			}
		}
	}
}
