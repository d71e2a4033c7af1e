package local

import "os/signal"

// AwaitSignalsCaughtAhead waits until the signals CatchSignalsAhead
// catches are caught.
func AwaitSignalsCaughtAhead() {
	kept.Lock()
	defer kept.Unlock()
	<-kept.ahead
}

// ForgetKeptSignals gives the kept signals back without raising any, so
// that the tests after one that kept them see the process as it was.
func ForgetKeptSignals() {
	kept.Lock()
	defer kept.Unlock()
	if kept.watch != nil {
		kept.watch.take(givenBack, true)
	}
	if kept.signals != nil {
		signal.Stop(kept.signals)
	}
	kept.asked, kept.signals, kept.ahead, kept.watch, kept.taken = false, nil, nil, nil, false
}

// WriteToClosedOutput is writeToClosedOutput, for a SIGPIPE caught ahead.
var WriteToClosedOutput = writeToClosedOutput
