package engine

import "testing"

// Issue 23, item 20: a resume context larger than the history it
// replaced counted as a negative saving (-44.2%). saved_percent is 0
// then: nothing was saved.
func TestIssue23ContextSavingIsNeverNegative(t *testing.T) {
	var a ContextAccount
	a.add(PhaseRecord{Contexts: 1, ContextTokens: 240, ReplacedTokens: 111})
	if a.SavedPercent != 0 {
		t.Errorf("saved_percent %v, want 0", a.SavedPercent)
	}
	a.add(PhaseRecord{Contexts: 1, ContextTokens: 100, ReplacedTokens: 1000})
	if want := 100 * float64(1111-340) / 1111; a.SavedPercent != want {
		t.Errorf("saved_percent %v, want %v", a.SavedPercent, want)
	}
}
