package local

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// CatchSignalsAhead is KeepSignalsCaught for a process that knows, from
// its first instant, that it will most likely run one session and end
// with it (pipeline run, resume): it starts catching the run's signals
// now, on a goroutine of its own. Catching them is a round trip to the
// runtime's signal thread for each of the five (the first starts that
// thread), 0.3 to 0.6 ms that then pass while the command line is parsed,
// the plan loads and the session opens, rather than between the session's
// open and its first step.
//
// Until the run takes them (keptSignals), a signal does what it did
// before anything caught it: the goroutine gives the signals back and
// raises it again at once, so a Ctrl+C ends a process held before its run
// (phases.yaml a FIFO, a hung file system) as it always has, and the
// head start changes when the signals are caught, never what one does. A
// process that turns out to end without that run, or to do something
// else than end with it (watch, ask at a pause, follow a fleet), calls
// LetSignalsAheadGo, which gives the signals back.
func CatchSignalsAhead() {
	kept.Lock()
	defer kept.Unlock()
	if kept.ahead != nil || kept.taken {
		return
	}
	kept.asked = true
	if kept.signals == nil {
		kept.signals = make(chan os.Signal, 4)
	}
	kept.ahead = make(chan struct{})
	kept.watch = &aheadWatch{handover: make(chan struct{}), done: make(chan struct{})}
	go func(signals chan os.Signal, caught chan struct{}, w *aheadWatch) {
		signal.Notify(signals, caughtSignals...)
		close(caught)
		w.watch(signals)
	}(kept.signals, kept.ahead, kept.watch)
}

// aheadWatch is the goroutine that holds the signals caught ahead until
// the run takes them or they are given back, whichever comes first: the
// one that moves owner from watching decides.
type aheadWatch struct {
	owner    atomic.Int32
	handover chan struct{} // closed by whoever takes the signals from it
	done     chan struct{} // closed when the goroutine has left
}

const (
	watching int32 = iota
	runOwns
	givenBack
)

// watch raises again each request signal that comes before the run
// takes them. It never takes kept's lock: its holder may wait on done.
func (w *aheadWatch) watch(signals chan os.Signal) {
	defer close(w.done)
	for {
		select {
		case <-w.handover:
			return
		case sig := <-signals:
			if sig == syscall.SIGPIPE && !OutputClosed() {
				continue // a stray SIGPIPE asks for nothing, caught or not
			}
			if !w.owner.CompareAndSwap(watching, givenBack) {
				// Taken meanwhile: the signal is its new owner's.
				select {
				case signals <- sig:
				default:
				}
				return
			}
			signal.Stop(signals)
			redo(sig)
			return
		}
	}
}

// take moves the signals from the goroutine to to (runOwns or
// givenBack), once it has caught them; false when the goroutine gave
// them back first. It returns once the goroutine has left when wait is
// set; otherwise it may still be handing over a signal it received.
func (w *aheadWatch) take(to int32, wait bool) bool {
	taken := w.owner.CompareAndSwap(watching, to)
	if taken {
		close(w.handover)
	}
	if wait || !taken {
		<-w.done
	}
	return taken
}

// LetSignalsAheadGo gives back the signals CatchSignalsAhead caught when
// no run took them: one that came in the meantime is raised again and
// does what it would have done uncaught (Ctrl+C ends the process, before
// this returns). After a run took them, or without CatchSignalsAhead, it
// does nothing.
func LetSignalsAheadGo() {
	kept.Lock()
	defer kept.Unlock()
	if kept.ahead == nil || kept.taken {
		return
	}
	<-kept.ahead
	given := kept.watch.take(givenBack, true)
	kept.asked, kept.ahead, kept.watch = false, nil, nil
	if !given {
		return // the goroutine gave them back itself
	}
	// When Stop returns, no signal is on its way to the channel: those
	// that came are in it.
	signal.Stop(kept.signals)
	for {
		select {
		case sig := <-kept.signals:
			if sig != syscall.SIGPIPE || OutputClosed() {
				redo(sig)
			}
		default:
			return
		}
	}
}

// redo does what sig did before it was caught, once given back: a
// SIGPIPE from a closed output is redone by a write to it, any other is
// raised again.
func redo(sig os.Signal) {
	if sig == syscall.SIGPIPE {
		writeToClosedOutput()
	} else {
		raise(sig.(syscall.Signal))
	}
}

// writeToClosedOutput writes one byte to standard output or error when
// its reader is gone, for a SIGPIPE caught ahead: the runtime ends the
// process by SIGPIPE then, as it did at the write that raised it. A
// SIGPIPE sent by kill(1), the output open, asks for nothing, caught or
// not. Gone is what OutputClosed calls closed: a pipe says POLLERR, a
// Unix socket (Node.js's pipes, the journal's stream) POLLHUP alone.
func writeToClosedOutput() {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return
	}
	for i, out := range []*os.File{os.Stdout, os.Stderr} {
		if fds[i].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			_, _ = out.Write([]byte{'\n'})
		}
	}
}
