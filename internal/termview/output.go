package termview

import (
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/pipeline-dev/pipeline/engine/local"
)

// ForOutput is the view of a run shown on out: the live view on a
// terminal, and plain lines, with marks, elsewhere, with plain (CI mode),
// or on a terminal that cannot move its cursor (TERM=dumb).
func ForOutput(out io.Writer, plain bool, marks LogMarkers) local.View {
	if f, ok := out.(*os.File); ok && !plain && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		width, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			width = 80
		}
		live := NewLive(f, width, ColourWanted())
		live.StopResize = followResize(f, live)
		return NewQueued(live)
	}
	return NewQueued(NewPlain(out, time.Now).WithMarks(marks))
}

// ColourWanted: no colour under NO_COLOR (set to anything but "", see
// no-color.org) or on a dumb terminal.
func ColourWanted() bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// followResize redraws the live view at the terminal's new width on
// SIGWINCH, until the returned function is called.
func followResize(f *os.File, live *Live) (stop func()) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-winch:
				if width, _, err := term.GetSize(int(f.Fd())); err == nil {
					live.Resize(width)
				}
			}
		}
	}()
	return func() {
		signal.Stop(winch)
		close(done)
	}
}
