package triggers

import (
	"fmt"
	"time"

	"github.com/expr-lang/expr/vm"
)

// Var is a bit set of Env's variables, in the order of Variables.
type Var uint32

func varIndex(name string) int {
	for i, v := range Variables {
		if v.Name == name {
			return i
		}
	}
	return -1
}

// VarOf returns the bit of a variable name, 0 for an unknown name.
func VarOf(name string) Var {
	if i := varIndex(name); i >= 0 {
		return 1 << i
	}
	return 0
}

// The variables a running step changes: the bits of their places in
// Variables (TestVarBitsAreTheirPlacesInVariables), constants so that no
// package init computes them at every start.
const (
	VarTokens         Var = 1 << 0
	VarContextTokens  Var = 1 << 1
	VarTotalTokens    Var = 1 << 2
	VarCostUSD        Var = 1 << 3
	VarElapsed        Var = 1 << 4
	VarPhaseElapsed   Var = 1 << 5
	VarSessionElapsed Var = 1 << 6
	VarCheckpoint     Var = 1<<9 | 1<<10 // checkpoint, checkpoint_note
	VarOutput         Var = 1 << 11
	VarFilesChanged   Var = 1 << 18
	// VarTime is every variable that moves with the clock alone.
	VarTime = VarElapsed | VarPhaseElapsed | VarSessionElapsed
	// varAll is every variable: Variables holds 22.
	varAll Var = 1<<22 - 1
)

func (e *Expression) reads() Var {
	var mask Var
	for _, name := range e.Reads {
		mask |= VarOf(name)
	}
	return mask
}

// Named is a named condition such as one pause_when trigger.
type Named struct {
	Name string
	Expr *Expression
}

// Monitor evaluates the pause_when triggers of a running step. The owner
// updates Env and says which variables changed; Check evaluates only the
// triggers that read one of them, so a stream of output that changes
// nothing a trigger reads costs no evaluation at all.
type Monitor struct {
	Env      Env
	triggers []Named
	masks    []Var
	changed  Var
	// Evaluated counts the expressions Check ran.
	Evaluated int
	// Reads is the union of what the triggers read: the owner can skip
	// computing a variable (output, say) that no trigger reads.
	Reads Var
	// machine runs every evaluation: a machine of its own for each would
	// allocate its stack each time, on the path from a checkpoint to the
	// step's interrupt.
	machine vm.VM
}

// NewMonitor watches triggers, first in the list first.
func NewMonitor(list []Named) *Monitor {
	m := &Monitor{triggers: list, changed: varAll}
	for _, t := range list {
		mask := t.Expr.reads()
		m.masks = append(m.masks, mask)
		m.Reads |= mask
	}
	return m
}

// Changed marks variables as changed since the last Check.
func (m *Monitor) Changed(v Var) { m.changed |= v }

// Needs reports whether any trigger reads one of the variables.
func (m *Monitor) Needs(v Var) bool { return m.Reads&v != 0 }

// Check evaluates the triggers whose variables changed and returns the
// first that is true, or nil. A trigger that fails to evaluate is an
// error, never a false.
func (m *Monitor) Check() (*Named, error) {
	changed := m.changed
	m.changed = 0
	if changed == 0 {
		return nil, nil
	}
	for i, t := range m.triggers {
		if m.masks[i]&changed == 0 {
			continue
		}
		m.Evaluated++
		yes, err := t.Expr.evalOn(&m.machine, &m.Env)
		if err != nil {
			return &m.triggers[i], fmt.Errorf("pause_when.%s: %w", t.Name, err)
		}
		if yes {
			return &m.triggers[i], nil
		}
	}
	return nil, nil
}

// SetElapsed moves the clock variables of the step, its phase and the
// session to the given step elapsed time.
func (m *Monitor) SetElapsed(step, phaseBefore, sessionBefore time.Duration) {
	if m.Env.Elapsed != step {
		m.Env.Elapsed = step
		m.Env.PhaseElapsed = phaseBefore + step
		m.Env.SessionElapsed = sessionBefore + step
		m.changed |= VarTime
	}
}

// SetTokens sets the step's tokens and the session total.
func (m *Monitor) SetTokens(step, sessionBefore int) {
	if m.Env.Tokens != step {
		m.Env.Tokens = step
		m.Env.TotalTokens = sessionBefore + step
		m.changed |= VarTokens | VarTotalTokens
	}
}
