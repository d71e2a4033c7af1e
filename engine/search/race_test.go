package search

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// holdChildEnv names the store a test binary started by holdIndexOpen
// indexes (see TestMain): it opens the index, updates it, says "open" on
// its standard output, and keeps the index open until its standard input
// ends, then closes it (or is killed first).
const holdChildEnv = "PIPELINE_SEARCH_TEST_HOLD_CHILD"

func holdAsChild(root string) int {
	st, err := store.Open(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	ix, err := Open(st, Options{Warn: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if _, err := ix.Update(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Println("open")
	io.Copy(io.Discard, os.Stdin)
	if err := ix.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

// holder is a search in another process holding the index open.
type holder struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *strings.Builder
}

// holdIndexOpen starts a search in another process, with n databases,
// and returns once it has the index open and updated: its documents are
// committed to the write-ahead logs, not yet to the databases' files.
func holdIndexOpen(t *testing.T, p *project, n int) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdChildEnv+"="+p.st.Root, fmt.Sprintf("%s=%d", DatabasesEnv, n))
	h := &holder{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = h.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if h.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		said <- line
	}()
	select {
	case line := <-said:
		if line != "open\n" {
			cmd.Wait()
			t.Fatalf("the other search said %q, not open: %s", line, h.stderr)
		}
	case <-time.After(testwait.Failsafe):
		t.Fatalf("the other search did not open the index in %v", testwait.Failsafe)
	}
	return h
}

// close has the other search close the index, and checks it did.
func (h *holder) close(t *testing.T) {
	t.Helper()
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil || h.stderr.Len() > 0 {
		t.Errorf("the other search: %v, %q", err, h.stderr)
	}
}

// kill kills the other search (SIGKILL): it leaves the index as it was.
func (h *holder) kill(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.cmd.Wait()
}

// walFrames reads the write-ahead log of the database at path: the last
// version of each page it holds (its frames of the log's generation).
func walFrames(t *testing.T, path string) map[uint32][]byte {
	t.Helper()
	wal, err := os.ReadFile(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if len(wal) < 32 {
		t.Fatalf("%s-wal holds %d bytes: no frames", path, len(wal))
	}
	pageSize := int(binary.BigEndian.Uint32(wal[8:12]))
	salts := wal[16:24]
	pages := map[uint32][]byte{}
	for at := 32; at+24+pageSize <= len(wal); at += 24 + pageSize {
		frame := wal[at : at+24+pageSize]
		if !bytes.Equal(frame[8:16], salts) {
			break
		}
		pages[binary.BigEndian.Uint32(frame[:4])] = frame[24:]
	}
	return pages
}

// checkpointStarted writes to the database file at path what SQLite's
// checkpoint writes first: page 1 from the write-ahead log, whose header
// counts the pages the log adds; with aPartOfPage2, the first 4 KiB of
// page 2 too, as a write that extends the file is seen partway. The file
// by itself then looks cut short (which the test checks), as it does to
// a search that looks at it while another search checkpoints.
func checkpointStarted(t *testing.T, path string, aPartOfPage2 bool) {
	t.Helper()
	pages := walFrames(t, path)
	first := pages[1]
	if first == nil {
		t.Fatalf("%s-wal holds no page 1", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(first, 0); err != nil {
		t.Fatal(err)
	}
	if second := pages[2]; aPartOfPage2 && second != nil {
		if _, err := f.WriteAt(second[:4096], int64(len(first))); err != nil {
			t.Fatal(err)
		}
	}
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if problem := headerProblem(path, info.Size()); !strings.Contains(problem, "cut short") {
		t.Fatalf("%s as a checkpoint starts it: %q, want it to look cut short by itself", path, problem)
	}
}

// Six searches at once on a new store: one said "index.1.db is cut short
// (16384 bytes for 11 pages of 16384): moved aside", of a whole index
// another search was checkpointing (SQLite writes the file's first page,
// which counts the pages, before the pages it adds), and moved it from
// under it. A search never judges a database by its file while another
// search has it open, nor one whose write-ahead log holds pages its file
// lacks (a search killed in a checkpoint): it reads it through SQLite,
// and finds it whole. The other search, killed, leaves index.dirty: the
// next one checks the index whole, and finds it whole too.
func TestSearchDoesNotJudgeAnIndexInACheckpoint(t *testing.T) {
	for _, other := range []string{"open", "killed"} {
		for _, part := range []bool{false, true} {
			name := fmt.Sprintf("other search %s, page 1 written", other)
			if part {
				name += ", page 2 partway"
			}
			t.Run(name, func(t *testing.T) { searchBesideACheckpoint(t, other == "killed", part) })
		}
	}
}

func searchBesideACheckpoint(t *testing.T, killOther, aPartOfPage2 bool) {
	databases(t, 2)
	p := quokkas(t, 3)
	other := holdIndexOpen(t, p, 2)
	for _, path := range Paths(p.st.Root) {
		checkpointStarted(t, path, aPartOfPage2)
	}
	if killOther {
		other.kill(t)
	}
	var warn bytes.Buffer
	r, err := Search(context.Background(), p.st, Query{Text: "quokka", Limit: 1000}, Options{Warn: &warn})
	if err != nil || warn.Len() > 0 || r.Rebuilt != "" || len(r.Hits) != 3*2 {
		t.Errorf("search: %v, warned %q, rebuilt %q, %d hits (want 6)", err, warn.String(), r.Rebuilt, len(r.Hits))
	}
	if !killOther {
		other.close(t)
	}
	for _, path := range Paths(p.st.Root) {
		if _, err := os.Lstat(path + asideSuffix); err == nil {
			t.Errorf("%s was moved aside", path)
		}
	}
	ix := p.open()
	if err := ix.Check(context.Background()); err != nil {
		t.Error(err)
	}
	if docs, _, err := ix.Count(context.Background()); err != nil || docs != 3*2 {
		t.Errorf("%d documents (%v), want 6", docs, err)
	}
}

// A database really cut short is still found so, though a search killed
// left pages in its write-ahead log (its file is then not judged by
// itself): the next search checks the index whole, moves it aside and
// builds it again, with the same hits.
func TestKilledSearchesIndexCutShortIsRebuilt(t *testing.T) {
	databases(t, 2)
	p := newProject(t)
	p.completedSessions(6, 3000, func(i, j int) string {
		return fmt.Sprintf("session %d line %d quokka and words to fill pages %d\n", i, j, j*i)
	})
	query := Query{Text: "quokka", Limit: 40}
	want, err := Search(context.Background(), p.st, query, Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := Path(p.st.Root)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	x := p.session("s99", "completed", nil)
	p.write(x, "build", 1, "agent", false, "a wombat digs\n")
	other := holdIndexOpen(t, p, 2)
	other.kill(t)
	if len(walFrames(t, path)) == 0 {
		t.Fatal("the killed search left no pages in the write-ahead log")
	}
	if err := os.Truncate(path, info.Size()/2/pageSize*pageSize); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	got, err := Search(context.Background(), p.st, query, Options{Warn: &warn})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the search said: %s", warn.String())
	if strings.Count(warn.String(), "\n") != 1 || !strings.Contains(warn.String(), FileName+" ") ||
		!strings.Contains(warn.String(), "rebuilding") || got.Rebuilt == "" {
		t.Errorf("warning %q, rebuilt %q; want one line: index.db rebuilt", warn.String(), got.Rebuilt)
	}
	if _, err := os.Stat(path + asideSuffix); err != nil {
		t.Errorf("not moved aside: %v", err)
	}
	// The same hits; their scores moved, with the wombat's document.
	if !sameHits(withoutScores(got.Hits), withoutScores(want.Hits)) {
		t.Errorf("other hits after the rebuild:\n%+v\nwant\n%+v", got.Hits, want.Hits)
	}
	ix := p.open()
	if err := ix.Check(context.Background()); err != nil {
		t.Error(err)
	}
	if hits := find(t, ix, Query{Text: "wombat"}); len(hits) != 1 {
		t.Errorf("wombat: %d hits, want 1", len(hits))
	}
}

func withoutScores(hits []Hit) []Hit {
	for i := range hits {
		hits[i].Score = 0
	}
	return hits
}
