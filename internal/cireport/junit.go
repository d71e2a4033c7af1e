package cireport

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pipeline-dev/pipeline/engine"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
	"github.com/pipeline-dev/pipeline/internal/termview"
)

// The JUnit report (run and resume --junit FILE): one testsuite for the
// session, one testcase per phase. A completed phase passes; a failed one
// has a <failure>; the phase a session paused in, and the phases it has
// not reached, are <skipped> with the reason. Each testcase has the phase's
// time and the tail of its transcripts in <system-out>. The shape is the
// JUnit XML that Jenkins, GitLab and the GitHub test-report actions read;
// cmd/pipeline's end-to-end tests validate it against the Jenkins xUnit
// plugin's junit-10.xsd (cmd/pipeline/testdata/junit-10.xsd).

// The types' xml tags say how junitXML writes them, as encoding/xml
// would (the root element is <testsuites>).
type junitSuites struct {
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	ID         string          `xml:"id,attr"`
	File       string          `xml:"file,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitOutcome `xml:"failure"`
	Skipped   *junitOutcome `xml:"skipped"`
	SystemOut *junitText    `xml:"system-out"`
}

// junitText is text kept as it is in a CDATA section, so that a
// transcript reads as it was written.
type junitText struct {
	Text string `xml:",cdata"`
}

type junitOutcome struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// junitTail bounds the transcript kept in a testcase's <system-out>.
const junitTail = 64 << 10

// JUnit is a session's state as JUnit XML. transcripts is the
// session's transcripts folder; text makes what came from outside safe
// (redacted, without escape sequences; XML escapes the rest).
func JUnit(plan *spec.Plan, s engine.State, r engine.StatusReport, transcripts string, text termview.ScreenText) ([]byte, error) {
	suite := junitSuite{Name: r.Pipeline, ID: r.ID, Timestamp: r.Created.UTC().Format("2006-01-02T15:04:05"),
		Time: seconds(s.SessionElapsed), File: ciPath(r.File)}
	suite.Properties = []junitProperty{{"session", r.ID}, {"status", r.Status}}
	if r.Spec != "" {
		suite.Properties = append(suite.Properties, junitProperty{"spec", ciPath(r.Spec)})
	}
	if r.PauseReason != "" {
		suite.Properties = append(suite.Properties, junitProperty{"pause_reason", text.Line(r.PauseReason)})
	}
	stopped := whereStopped(plan, s)
	order := map[string]int{}
	for i, p := range plan.Phases {
		order[p.Name] = i
	}
	for i, p := range s.Phases {
		c := junitCase{Name: p.Name, Classname: r.Pipeline, Time: seconds(p.Duration)}
		switch {
		case p.Status == engine.StatusFailed:
			c.Failure = &junitOutcome{Message: text.Line(s.FailReason), Type: "failed",
				Text: xmlText(termsafe.Text(text.Redactor.String(failureDetail(p, s))))}
			suite.Failures++
		case s.Status == engine.StatusPaused && s.Pause != nil && i == stopped.phase && p.Status != engine.StatusCompleted:
			c.Skipped = &junitOutcome{Message: text.Line("paused: " + pauseText(r))}
			suite.Skipped++
		case p.Status != engine.StatusCompleted:
			c.Skipped = &junitOutcome{Message: text.Line(notReached(s, r))}
			suite.Skipped++
		}
		if out := transcriptTail(transcripts, p.Name, order, junitTail); len(out) > 0 {
			c.SystemOut = &junitText{xmlText(text.Redactor.String(termsafe.Text(string(out))))}
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	all := junitSuites{Name: r.Pipeline, Tests: suite.Tests, Failures: suite.Failures, Time: suite.Time, Suites: []junitSuite{suite}}
	return junitXML(all), nil
}

// xmlText is s with what XML 1.0 cannot hold, even escaped, replaced by
// U+FFFD: bytes that are not UTF-8, control characters other than tab,
// line feed and carriage return, U+FFFE and U+FFFF.
func xmlText(s string) string {
	s = strings.ToValidUTF8(s, "\ufffd")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20 || r == 0xfffe || r == 0xffff:
			return '\ufffd'
		}
		return r
	}, s)
}

// failureDetail says how a failed phase went: the session's reason and
// the exit codes of its steps.
func failureDetail(p engine.PhaseRecord, s engine.State) string {
	return fmt.Sprintf("%s\nattempts: %d, exit codes: %v\n", s.FailReason, p.Attempts, p.ExitCodes)
}

// notReached is why a phase did not run.
func notReached(s engine.State, r engine.StatusReport) string {
	switch {
	case s.Status == engine.StatusPaused:
		return fmt.Sprintf("not reached: the session paused in phase %s (%s)", r.Phase, pauseText(r))
	case s.Status == engine.StatusFailed:
		return "not reached: the session failed in phase " + r.Phase
	}
	return "not reached: the session is " + string(s.Status)
}

// seconds is a duration as JUnit writes it: seconds, with milliseconds.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.3f", d.Seconds())
}

// transcriptTail is the end of a phase's transcripts, at most limit
// bytes, from the start of a line: its attempts and steps in order, each
// headed by its file as logs heads them. A transcript that cannot be read
// is left out: the report is still worth having.
func transcriptTail(root, phase string, order map[string]int, limit int) []byte {
	paths := store.OrderedStepFiles(root, phase, order, false)
	var parts [][]byte
	left := limit
	for i := len(paths) - 1; i >= 0 && left > 0; i-- {
		rel, _ := filepath.Rel(root, paths[i])
		content := readTail(paths[i], left)
		part := append([]byte(fmt.Sprintf("==> %s <==\n", filepath.ToSlash(rel))), content...)
		if len(content) > 0 && content[len(content)-1] != '\n' {
			part = append(part, '\n')
		}
		parts = append(parts, part)
		left -= len(part)
	}
	var out []byte
	for i := len(parts) - 1; i >= 0; i-- {
		out = append(out, parts[i]...)
	}
	return out
}

// readTail reads the last n bytes of a file, from the start of a line when
// it had to cut.
func readTail(path string, n int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil
	}
	start := max(info.Size()-int64(n), 0)
	buf := make([]byte, info.Size()-start)
	got, _ := f.ReadAt(buf, start)
	buf = buf[:got]
	if start > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return buf
}
