package main

// The requests the fleet's dev server answered, by operation, from its
// Prometheus metrics: how many calls a pipeline costs the server, and
// which.

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// freeLocalPort is a port on 127.0.0.1 free a moment ago, for the dev
// server's metrics.
func freeLocalPort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var requestLine = regexp.MustCompile(`^service_requests\{(.*)\} ([0-9.e+]+)$`)

// frontendRequests reads the frontend's request counts by operation
// from the metrics at port; nil when they cannot be read.
func frontendRequests(port int) map[string]float64 {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := requestLine.FindStringSubmatch(sc.Text())
		if m == nil || !strings.Contains(m[1], `service_name="frontend"`) {
			continue
		}
		op := label(m[1], "operation")
		v, _ := strconv.ParseFloat(m[2], 64)
		out[op] += v
	}
	return out
}

func label(labels, name string) string {
	_, rest, ok := strings.Cut(labels, name+`="`)
	if !ok {
		return "?"
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// requestsLine is the requests of after less those of before, per
// pipeline, the most first.
func requestsLine(before, after map[string]float64, pipelines int) string {
	if after == nil || pipelines == 0 {
		return ""
	}
	type op struct {
		name string
		n    float64
	}
	var ops []op
	var all float64
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			ops = append(ops, op{name, d / float64(pipelines)})
			all += d / float64(pipelines)
		}
	}
	slices.SortFunc(ops, func(a, b op) int { return int(b.n*100) - int(a.n*100) })
	parts := []string{fmt.Sprintf("%.1f in all", all)}
	for _, o := range ops {
		if o.n >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.1f", o.name, o.n))
		}
	}
	return strings.Join(parts, ", ")
}
