package local

import (
	"strings"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
)

// scope returns the write scope of a phase the run can check, nil when
// the phase has none or git cannot check it. Outside a git work tree the
// run says so once and goes on: a read-only phase still asks its agent
// CLI to change nothing, but what a step changes is not known.
func (r *StepRunner) scope(phase *spec.PhasePlan, git *session.Git) []string {
	if phase.Writes == nil {
		return nil
	}
	if git == nil {
		if !r.scopeUnchecked {
			r.scopeUnchecked = true
			r.say("pipeline: phase %q has writes:, but %s is not in a git work tree (or git ignores it): the write scope is not checked", phase.Name, r.Session.Dir())
		}
		return nil
	}
	if phase.Writes.Value == nil {
		return []string{} // read-only: nothing is in scope
	}
	return phase.Writes.Value
}

// checkScope returns the files the step changed outside its phase's
// writes globs, since stepTree (the work tree when the step started), and
// whether on_out_of_scope: revert put them back; now is the snapshot of
// the work tree it judged, zero when it took none or put files back.
func (r *StepRunner) checkScope(git *session.Git, stepTree string, phase *spec.PhasePlan, step string) (files []string, reverted bool, now session.WorkTree) {
	if stepTree == "" {
		r.say("pipeline: git could not keep the work tree before step %s: its write scope is not checked", step)
		return nil, false, now
	}
	files, ok, now := git.OutOfScope(stepTree, phase.Writes.Value)
	if !ok {
		r.say("pipeline: git could not compare the work tree with the one before step %s: its write scope is not checked", step)
		return nil, false, now
	}
	if len(files) == 0 || phase.OnOutOfScope.Value != spec.OutOfScopeRevert {
		return files, false, now
	}
	if err := git.Revert(stepTree, files); err != nil {
		// Some may have been put back.
		r.say("pipeline: putting back the files step %s changed outside writes: %v", step, err)
		return files, false, session.WorkTree{}
	}
	r.say("pipeline: step %s changed %d file(s) outside writes; put back as they were before the step (on_out_of_scope: revert): %s",
		step, len(files), strings.Join(files, ", "))
	return files, true, session.WorkTree{}
}
