package local

import (
	"os"
	"os/signal"
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
// A signal that comes before the run waits in the channel for it: the
// run starts its first step and, at once, stops it and pauses, as for a
// Ctrl+C at the step's start (the same rules: fromSignal). A process that
// turns out to end without that run, or to do something else than end
// with it (watch, ask at a pause, follow a fleet), calls
// LetSignalsAheadGo, which gives the signals back.
func CatchSignalsAhead() {
	kept.Lock()
	defer kept.Unlock()
	if kept.ahead != nil || kept.taken {
		return
	}
	kept.asked = true
	if kept.signals == nil {
		// Nothing takes from it until the run, which may be a while
		// (a plan read from a slow disk): a full channel drops the
		// signal, and a Ctrl+C must not be lost behind stray SIGPIPEs.
		kept.signals = make(chan os.Signal, 32)
	}
	kept.ahead = make(chan struct{})
	go func(signals chan os.Signal, done chan struct{}) {
		signal.Notify(signals, caughtSignals...)
		close(done)
	}(kept.signals, kept.ahead)
}

// LetSignalsAheadGo gives back the signals CatchSignalsAhead caught when
// no run took them: each that came in the meantime is raised again and
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
	// When Stop returns, no signal is on its way to the channel: those
	// that came are in it.
	signal.Stop(kept.signals)
	kept.asked, kept.ahead = false, nil
	for {
		select {
		case sig := <-kept.signals:
			if sig == syscall.SIGPIPE {
				writeToClosedOutput()
			} else {
				raise(sig.(syscall.Signal))
			}
		default:
			return
		}
	}
}

// writeToClosedOutput writes one byte to standard output or error when
// its reader is gone, for a SIGPIPE caught ahead: the runtime ends the
// process by SIGPIPE then, as it did at the write that raised it. A
// SIGPIPE sent by kill(1), the output open, asks for nothing, caught or
// not.
func writeToClosedOutput() {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return
	}
	for i, out := range []*os.File{os.Stdout, os.Stderr} {
		if fds[i].Revents&unix.POLLERR != 0 {
			_, _ = out.Write([]byte{'\n'})
		}
	}
}
