package telemetry

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/syncbuf"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// Finish at the end of a command stops the periodic export; an export of
// the ticker then on its way to the collector ends, with its spans, and
// is not cancelled (pipeline: telemetry: cannot export … context
// canceled, the spans it carried lost).
func TestFinishLetsAnExportOnItsWayEnd(t *testing.T) {
	inFlight, release := make(chan struct{}, 1), make(chan struct{})
	var mu sync.Mutex
	cancelled, delivered := false, 0
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case inFlight <- struct{}{}:
			// The first export waits at the collector until released.
			select {
			case <-release:
			case <-r.Context().Done():
				mu.Lock()
				cancelled = true
				mu.Unlock()
				return
			}
		default:
		}
		mu.Lock()
		delivered++
		mu.Unlock()
	}))
	defer collector.Close()
	warned := &syncbuf.Buffer{}
	tel := &Telemetry{Warn: warned}
	tel.mu.Lock()
	tel.activate(Config{TracesURL: collector.URL + "/v1/traces", MetricInterval: time.Millisecond})
	tel.ended = append(tel.ended, &span{name: "on its way", start: time.Now(), end: time.Now()})
	tel.mu.Unlock()
	<-inFlight
	finished := make(chan struct{})
	go func() {
		tel.Finish()
		close(finished)
	}()
	// Released once Finish has taken the ticker: from then on a stop
	// that cancelled the export would have reached the collector first.
	for deadline := time.Now().Add(testwait.Failsafe); ; time.Sleep(time.Millisecond) {
		tel.mu.Lock()
		taken := tel.ticker == nil
		tel.mu.Unlock()
		if taken {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Finish did not take the ticker")
		}
	}
	close(release)
	<-finished
	mu.Lock()
	defer mu.Unlock()
	if cancelled || delivered != 1 || warned.String() != "" {
		t.Errorf("the export on its way: cancelled %v, delivered %d, warned %q", cancelled, delivered, warned.String())
	}
}
