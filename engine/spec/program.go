package spec

import (
	"sync"

	"github.com/pipeline-dev/pipeline/triggers"
)

// program is an expression's compiled form. A plan decoded from
// phases.yaml compiles every expression as it checks the file; a plan
// read from the plan cache was checked when it was cached, and compiles
// an expression only when a command first evaluates it, so that status
// of a 1,000-phase plan compiles none and resume compiles one phase's.
type program struct {
	once     sync.Once
	compiled *triggers.Expression
	// lines are the lines of the expression's file, for the locator of a
	// program compiled late; nil for one compiled as the file was decoded.
	lines func() []string
}

// compiledProgram is a program compiled already.
func compiledProgram(compiled *triggers.Expression) *program {
	p := &program{compiled: compiled}
	p.once.Do(func() {})
	return p
}

// Program is the compiled expression; nil when it did not compile (a
// file with problems, which Load refuses).
func (e *Expr) Program() *triggers.Expression {
	if e == nil || e.program == nil {
		return nil
	}
	p := e.program
	p.once.Do(func() {
		compiled, err := triggers.Compile(e.Source, e.Kind)
		if err != nil {
			return
		}
		file, lines := e.At.File, p.lines
		at := *e
		compiled.Locate = func(offset int) string {
			walker := &decoder{file: file, lines: lines()}
			return walker.exprPosition(at, offset).String()
		}
		p.compiled = compiled
	})
	return p.compiled
}
