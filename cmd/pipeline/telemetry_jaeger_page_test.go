//go:build jaeger

package main

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pipeline-dev/pipeline/internal/browsertest"
	"github.com/pipeline-dev/pipeline/internal/jaegertest"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// traceScreenshots is where the picture of the traces goes (bin/ is
// not checked in; the README's copy is docs/img/telemetry-trace.png).
const traceScreenshots = "../../bin/telemetry-screenshots"

// screenshotTraces draws the traces as Jaeger's query API returned them
// (the Jaeger built from the module proxy serves a placeholder page in
// place of its UI): each span a bar on the time line of its trace,
// indented under its parent, with its step's tokens and exit code; the
// resume's link to the first run said. It takes the page's picture in
// headless Chromium.
func screenshotTraces(t *testing.T, traces ...jaegertest.Trace) {
	t.Helper()
	page := traceHTML(traces)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, page)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(browsertest.New(t, chromedp.WindowSize(1280, 700)), testwait.Failsafe)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.CSS(".span"))); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	os.MkdirAll(traceScreenshots, 0o755)
	path := filepath.Join(traceScreenshots, "trace.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func traceHTML(traces []jaegertest.Trace) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><meta charset="utf-8"><style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h2{font-size:15px;margin:18px 0 4px}.note{color:#666;margin:0 0 6px}
.row{display:flex;align-items:center;height:24px;border-bottom:1px solid #eee}
.name{width:200px;white-space:nowrap;overflow:hidden}
.lane{position:relative;flex:1;height:14px}
.span{position:absolute;height:14px;border-radius:2px;min-width:2px}
.tags{width:520px;color:#555;font-size:12px;padding-left:8px;white-space:nowrap;overflow:hidden}
</style><h1 style="font-size:17px">Spans of one session in Jaeger: the run that paused at a checkpoint, and its resume</h1>`)
	colors := map[string]string{"session": "#17a2b8", "phase": "#6f42c1", "attempt": "#fd7e14", "step": "#28a745"}
	for _, tr := range traces {
		root := rootOf(tr)
		if root == nil {
			continue
		}
		start, end := root.StartTime, root.StartTime+root.Duration
		for _, s := range tr.Spans {
			start, end = min(start, s.StartTime), max(end, s.StartTime+s.Duration)
		}
		total := max(end-start, 1)
		fmt.Fprintf(&b, "<h2>trace %s · %s · %v</h2>", tr.TraceID[:16], html.EscapeString(fmt.Sprint(root.Tag("pipeline.invocation"))), fmt.Sprint(root.Tag("pipeline.status")))
		for _, ref := range root.References {
			if ref.RefType == "FOLLOWS_FROM" {
				fmt.Fprintf(&b, `<p class="note">linked to the session's first run: trace %s, span %s</p>`, ref.TraceID[:16], ref.SpanID)
			}
		}
		var walk func(parent string, depth int)
		walk = func(parent string, depth int) {
			for _, s := range tr.Spans {
				p := ""
				if up := parentOf(tr, s); up != nil {
					p = up.SpanID
				}
				if p != parent {
					continue
				}
				kind, _, _ := strings.Cut(s.OperationName, " ")
				left := float64(s.StartTime-start) / float64(total) * 100
				width := float64(s.Duration) / float64(total) * 100
				fmt.Fprintf(&b, `<div class="row"><div class="name" style="padding-left:%dpx">%s</div><div class="lane"><div class="span" style="left:%.2f%%;width:%.2f%%;background:%s"></div></div><div class="tags">%s</div></div>`,
					depth*16, html.EscapeString(s.OperationName), left, width, colors[kind], html.EscapeString(spanTags(s)))
				walk(s.SpanID, depth+1)
			}
		}
		walk("", 0)
	}
	return b.String()
}

func spanTags(s jaegertest.Span) string {
	var parts []string
	for _, k := range []string{"pipeline.pause.reason", "process.exit.code", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.request.model", "pipeline.trigger", "pipeline.phase.status"} {
		if v := s.Tag(k); v != nil {
			parts = append(parts, fmt.Sprintf("%s=%v", strings.TrimPrefix(strings.TrimPrefix(k, "gen_ai.usage."), "pipeline."), v))
		}
	}
	if d := s.Duration; d > 0 {
		parts = append([]string{fmt.Sprintf("%.1f ms", float64(d)/1000)}, parts...)
	}
	return strings.Join(parts, " ")
}
