package session

import "testing"

// A store restored on another machine (a CI cache, an export, a copied
// project) may name a step's process group that is someone else's here:
// only one recorded on this machine and boot is swept.
func TestStepGroupIsThisMachinesOnly(t *testing.T) {
	for _, c := range []struct {
		content string
		pgid    int
		ok      bool
	}{
		{"1234 boot-a", 1234, true},
		{"1234 boot-b", 0, false},
		{"1234", 1234, true}, // written before machines were recorded
		{"1234\n", 1234, true},
		{"", 0, false},
		{"x boot-a", 0, false},
		{"1234 boot-a extra", 0, false},
	} {
		pgid, ok := stepGroup([]byte(c.content), "boot-a")
		if pgid != c.pgid || ok != c.ok {
			t.Errorf("stepGroup(%q) = %d, %v; want %d, %v", c.content, pgid, ok, c.pgid, c.ok)
		}
	}
	if machineID() == "" {
		t.Error("this machine has no id: every group recorded would count as this machine's")
	}
}
