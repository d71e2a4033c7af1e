package triggers

import "testing"

// Each Var constant is the bit of its variable's place in Variables, and
// varAll has a bit for each variable and no more.
func TestVarBitsAreTheirPlacesInVariables(t *testing.T) {
	for name, bit := range map[string]Var{"tokens": VarTokens, "context_tokens": VarContextTokens, "total_tokens": VarTotalTokens,
		"cost_usd": VarCostUSD, "elapsed": VarElapsed, "phase_elapsed": VarPhaseElapsed, "session_elapsed": VarSessionElapsed,
		"output": VarOutput, "files_changed": VarFilesChanged} {
		if got := VarOf(name); got != bit || got == 0 {
			t.Errorf("VarOf(%q) = %b, the constant %b", name, got, bit)
		}
	}
	if got := VarOf("checkpoint") | VarOf("checkpoint_note"); got != VarCheckpoint {
		t.Errorf("checkpoint and checkpoint_note are %b, VarCheckpoint %b", got, VarCheckpoint)
	}
	if want := Var(1<<len(Variables) - 1); varAll != want {
		t.Errorf("varAll = %b, %d variables make %b", varAll, len(Variables), want)
	}
}
