package steps

import "testing"

// markerFirst holds the first byte of each marker name and no other,
// indentByte the bytes that may indent a marker and no other: the tables
// are written out so that no package init builds them.
func TestMarkerTablesAreTheirBytes(t *testing.T) {
	var first, indent [256]bool
	for _, k := range markerKinds {
		first[k[0]] = true
	}
	for _, c := range []byte(" \t-*+>.)0123456789") {
		indent[c] = true
	}
	if markerFirst != first {
		t.Errorf("markerFirst differs from the first bytes of %v", markerKinds)
	}
	if indentByte != indent {
		t.Errorf("indentByte differs from white space, bullets, quotes and digits")
	}
}

// Each agent kind has its adapter, and Register puts one in place of a
// built-in one.
func TestAdapterForEachKind(t *testing.T) {
	for kind, want := range map[string]Adapter{"command": commandAdapter{}, "claude": claudeAdapter{}, "codex": codexAdapter{}, "gemini": geminiAdapter{}} {
		if a, err := AdapterFor(kind); err != nil || a != want {
			t.Errorf("AdapterFor(%q) = %T, %v", kind, a, err)
		}
	}
	if _, err := AdapterFor("cobol"); err == nil {
		t.Error("AdapterFor(cobol) found an adapter")
	}
	defer func() { registered = nil }()
	Register("claude", commandAdapter{})
	if a, _ := AdapterFor("claude"); a != (commandAdapter{}) {
		t.Errorf("a registered claude adapter is not used: %T", a)
	}
}
