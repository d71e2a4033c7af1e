package local

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/session"
)

// interrupts are where the run's requests to pause come from: the
// Interrupts channel and, when asked, the signals. The loop receives from
// both itself: a goroutine that merged them into one channel was one more
// woken, on another thread, for each.
type interrupts struct {
	requests <-chan Interrupt // nil when not set: never ready
	signals  chan os.Signal   // nil when signals are not caught
	sess     *session.Session
	// outputLost is set once a hang-up or a closed output asked for the
	// pause: every later write raises SIGPIPE again, and must not count
	// as a second Ctrl+C.
	outputLost bool
}

// interrupts starts catching the signals when asked; stop lets them go.
func (d *Driver) interrupts(sess *session.Session) (in *interrupts, stop func()) {
	in = &interrupts{requests: d.Interrupts, sess: sess}
	if !d.Signals {
		return in, func() {}
	}
	if in.signals = keptSignals(); in.signals != nil {
		return in, func() {}
	}
	in.signals = make(chan os.Signal, 4)
	signal.Notify(in.signals, caughtSignals...)
	return in, func() { signal.Stop(in.signals) }
}

// caughtSignals are the signals a run catches (Driver.Signals), but
// SIGINT and SIGHUP only when the process did not start with them ignored
// (nohup, trap "" INT, a script's job in the background): its parent
// meant the run to go on through them. Caught, they would pause it, and
// the step's process would start with them at their default action (the
// runtime resets the signals it catches in a child), where they were
// meant ignored. The runtime itself leaves the others' default action in
// place: those are always caught.
var caughtSignals = notIgnored(runSignals...)

// runSignals are the signals a run asks to pause or to end its step.
var runSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE}

// notIgnored are those of sigs not ignored now: at the package's
// initialisation, before anything catches them, those the process
// started with ignored.
func notIgnored(sigs ...os.Signal) []os.Signal {
	var caught []os.Signal
	for _, sig := range sigs {
		if !signal.Ignored(sig) {
			caught = append(caught, sig)
		}
	}
	return caught
}

// kept is the catching of the signals that outlives the runs, once
// KeepSignalsCaught asked for it.
var kept struct {
	sync.Mutex
	asked   bool
	signals chan os.Signal
	// ahead is closed once the catching CatchSignalsAhead started is
	// done; nil when it was not asked for.
	ahead chan struct{}
	// watch holds the signals caught ahead until a run takes them.
	watch *aheadWatch
	// taken: a run took the signals; before that, those caught ahead
	// are still the process's (see CatchSignalsAhead).
	taken bool
}

// KeepSignalsCaught has the runs of this process that catch signals
// (Driver.Signals), from the next one on, leave them caught when they
// end, until the process exits: a signal that comes between two runs is
// the next run's (it pauses at once), one that comes after the last run is
// dropped. It is for a process that runs one session at a time and ends
// with it (pipeline run, resume): giving the signals back (signal.Stop)
// is a round trip to the runtime's signal thread for each of them, 15 to
// 30 futex calls and up to as many context switches at the end of every
// run, for a process that is about to exit.
func KeepSignalsCaught() {
	kept.Lock()
	defer kept.Unlock()
	kept.asked = true
}

// keptSignals is the channel of the signals caught for good, nil unless
// KeepSignalsCaught asked for it. Each call catches them again those
// that were let go since (signal.Ignore, as pipeline run does once its
// run is over); the others cost nothing more.
func keptSignals() chan os.Signal {
	kept.Lock()
	defer kept.Unlock()
	if !kept.asked {
		return nil
	}
	if kept.ahead != nil {
		<-kept.ahead
	}
	if kept.watch != nil {
		// A signal from now on is the run's; one the goroutine gave
		// back before has ended the process.
		kept.watch.take(runOwns, false)
		kept.watch = nil
	}
	if kept.signals == nil {
		kept.signals = make(chan os.Signal, 4)
	}
	kept.taken = true
	signal.Notify(kept.signals, caughtSignals...)
	return kept.signals
}

// fromSignal is the request to pause a signal makes; false for a SIGPIPE
// or SIGHUP that asks for nothing.
func (s *interrupts) fromSignal(sig os.Signal) (in Interrupt, ok bool) {
	switch sig {
	case syscall.SIGHUP, syscall.SIGPIPE:
		// SIGPIPE comes from any write to a closed pipe, a step's
		// standard input too: only a closed output of the runner's own
		// pauses.
		if s.outputLost || (sig == syscall.SIGPIPE && !OutputClosed()) {
			return in, false
		}
		s.outputLost = true
		in.Cause = "the terminal hung up (SIGHUP)"
		if sig == syscall.SIGPIPE {
			in.Cause = "the output was closed (SIGPIPE)"
		}
	case syscall.SIGQUIT:
		in.Kill, in.Cause = true, "quit (SIGQUIT)"
	case syscall.SIGTERM:
		in.Cause = "terminated (SIGTERM)"
	default:
		in.Cause = "interrupted (SIGINT)"
	}
	if notes, ok := s.sess.PauseRequest(); ok && sig == syscall.SIGTERM {
		in.Reason, in.Notes, in.Cause = engine.ReasonHuman, notes, CausePauseCommand
	} else if ok {
		in.Reason, in.Notes = engine.ReasonHuman, notes
	}
	return in, true
}
