package telemetry

import (
	"bytes"
	"context"
	"fmt"
	neturl "net/url"
	"sync"
	"time"

	"github.com/pipeline-dev/pipeline/internal/web"
)

// ticker exports what is there every interval while a long-running
// command (watch, worker, ui) runs; the export at the end does the rest.
type ticker struct {
	stop context.CancelFunc
	done chan struct{}
}

func (t *Telemetry) startTicker(every time.Duration) *ticker {
	ctx, stop := context.WithCancel(context.Background())
	tk := &ticker{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(tk.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				// Not under ctx: Finish stops the ticking, and an export
				// then on its way ends (within ExportTimeout) rather than
				// be cancelled with the spans it carries.
				exportCtx, cancel := context.WithTimeout(context.Background(), ExportTimeout)
				t.Export(exportCtx)
				cancel()
			}
		}
	}()
	return tk
}

// Finish exports what is left, within ExportTimeout, and stops the
// periodic export: the end of the command. Spans of sessions still open
// end now. An export of the ticker on its way is let end first (within
// its own ExportTimeout), so Finish takes at most twice ExportTimeout.
func (t *Telemetry) Finish() {
	t.mu.Lock()
	if !t.on {
		t.mu.Unlock()
		return
	}
	now := t.now()
	for s, tr := range t.sessions {
		if tr != nil {
			t.endAll(tr, now)
		}
		delete(t.sessions, s)
	}
	for s, tr := range t.workerSteps {
		t.endUnfinished(tr, now)
		delete(t.workerSteps, s)
	}
	tk := t.ticker
	t.ticker = nil
	t.mu.Unlock()
	if tk != nil {
		tk.stop()
		<-tk.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), ExportTimeout)
	defer cancel()
	t.Export(ctx)
}

// Export sends the spans ended so far and the metrics as they stand; a
// failure is said once, and what it carried is dropped.
func (t *Telemetry) Export(ctx context.Context) {
	t.mu.Lock()
	if !t.on {
		t.mu.Unlock()
		return
	}
	spans := t.ended
	t.ended = nil
	cfg := t.cfg
	metrics := t.meters.snapshot()
	start := t.meters.start
	now := t.now()
	t.mu.Unlock()
	var wg sync.WaitGroup
	if cfg.TracesURL != "" && len(spans) > 0 {
		body := encodeTraces(cfg.Resource, t.Version, spans)
		wg.Go(func() { t.post(ctx, cfg, cfg.TracesURL, body) })
	}
	if cfg.MetricsURL != "" && len(metrics) > 0 {
		body := encodeMetrics(cfg.Resource, t.Version, start, now, metrics)
		wg.Go(func() { t.post(ctx, cfg, cfg.MetricsURL, body) })
	}
	wg.Wait()
}

// post sends one OTLP request.
func (t *Telemetry) post(ctx context.Context, cfg Config, url string, body []byte) {
	header := [][2]string{{"Content-Type", "application/x-protobuf"}}
	for k, v := range cfg.Headers {
		header = append(header, [2]string{k, v})
	}
	where := shownURL(url)
	// The error leaves out the URL, which may hold a password.
	resp, err := web.Post(ctx, web.Request{URL: url, Header: header, Body: body, Keep: 512})
	if err != nil {
		t.warn(fmt.Sprintf("cannot export to %s: %v", where, err))
		return
	}
	if resp.StatusCode/100 != 2 {
		t.warn(fmt.Sprintf("the collector at %s refused the export: %s %s", where, resp.Status, bytes.TrimSpace(resp.Body)))
	}
}

// shownURL is an endpoint as a warning shows it: a password in it
// masked.
func shownURL(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "(an endpoint that is no URL)"
	}
	return u.Redacted()
}
