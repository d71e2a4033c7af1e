package local

import "os/signal"

// AwaitSignalsCaughtAhead waits until the signals CatchSignalsAhead
// catches are caught, and reports whether one came and waits for a run.
func AwaitSignalsCaughtAhead() (pending bool) {
	kept.Lock()
	defer kept.Unlock()
	<-kept.ahead
	return len(kept.signals) > 0
}

// ForgetKeptSignals gives the kept signals back without raising any, so
// that the tests after one that kept them see the process as it was.
func ForgetKeptSignals() {
	kept.Lock()
	defer kept.Unlock()
	if kept.signals != nil {
		signal.Stop(kept.signals)
	}
	kept.asked, kept.signals, kept.ahead, kept.taken = false, nil, nil, false
}
