package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// Issue 23, item 27: a .pipeline that is a dangling symbolic link made
// run say "mkdir .pipeline: file exists", and the read commands "no
// sessions yet". The store says it is a link, where it points, and what
// to do; so for a link on a folder above it, and for a link that loops.
func TestIssue23DanglingStateLinkIsNamed(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, root, link, target string
		want                     []string
	}{
		{"the state folder", filepath.Join(dir, "a", ".pipeline"), filepath.Join(dir, "a", ".pipeline"), filepath.Join(dir, "gone"),
			[]string{"is a dangling symbolic link to " + filepath.Join(dir, "gone"), "mkdir -p " + filepath.Join(dir, "gone"), "rm " + filepath.Join(dir, "a", ".pipeline")}},
		{"relative target", filepath.Join(dir, "b", ".pipeline"), filepath.Join(dir, "b", ".pipeline"), "../elsewhere/state",
			[]string{"dangling symbolic link to ../elsewhere/state", "mkdir -p " + filepath.Join(dir, "elsewhere", "state")}},
		{"a folder above", filepath.Join(dir, "c", "state", ".pipeline"), filepath.Join(dir, "c", "state"), filepath.Join(dir, "nowhere"),
			[]string{filepath.Join(dir, "c", "state") + " is a dangling symbolic link"}},
		{"a loop", filepath.Join(dir, "d", ".pipeline"), filepath.Join(dir, "d", ".pipeline"), filepath.Join(dir, "d", ".pipeline"),
			[]string{"leads back to itself (a loop)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := os.MkdirAll(filepath.Dir(c.link), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(c.target, c.link); err != nil {
				t.Fatal(err)
			}
			for what, open := range map[string]func(string) (*Store, error){"Open": Open, "OpenExisting": OpenExisting} {
				st, err := open(c.root)
				if err == nil {
					st.Close()
					t.Fatalf("%s: no error", what)
				}
				if errors.Is(err, ErrNoStore) || !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: %v (%T), want a missing file (exit 2), not ErrNoStore", what, err, err)
				}
				for _, want := range c.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: %q does not say %q", what, err, want)
					}
				}
				if strings.Contains(err.Error(), "file exists") {
					t.Errorf("%s: %q still says mkdir's words", what, err)
				}
			}
		})
	}
}

// Issue 23, item 27: pipeline sessions said "no sessions yet" and exited 0
// when .pipeline/sessions was a file: OpenExisting took it for a store
// with no sessions. It is an error that names the file (ENOTDIR: exit 2).
func TestIssue23SessionsFileIsNotNoSessions(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".pipeline")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sessions"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenExisting(root)
	if err == nil || errors.Is(err, ErrNoStore) || !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), "file named sessions") {
		t.Fatalf("OpenExisting: %v; want a file named sessions said, ENOTDIR, not ErrNoStore", err)
	}
	// A link there is refused as any link in the store is.
	if err := os.Remove(filepath.Join(root, "sessions")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "sessions")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenExisting(root); !errors.Is(err, ErrSymlink) {
		t.Fatalf("OpenExisting with a link: %v, want ErrSymlink", err)
	}
}

// Issue 23, item 25: a line of index.tsv with the id ../../../pwned was
// listed by sessions, and clean stopped on it (exit 1) after removing
// other sessions. A line pipeline did not write (an id that is not one
// name of the sessions folder, a key that is not one, a field that is no
// number) is skipped with one warning naming the file and the line, and
// never acted on; the sessions around it list, and go, as before.
func TestIssue23ForgedIndexLineIsSkippedWithAWarning(t *testing.T) {
	st := newStore(t)
	var warnings strings.Builder
	st.Warn = &warnings
	for _, id := range []string{"s1", "s2"} {
		x, err := st.Create(Meta{ID: id, Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		x.Close()
	}
	outside := filepath.Join(filepath.Dir(st.Root), "pwned")
	if err := os.MkdirAll(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	forged := []string{
		"../../../pwned\tk\tcompleted\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		"../pwned\tk\tcompleted\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		"a/b\tk\tfailed\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		".new-x\tk\tfailed\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		"s3\x00\tk\tfailed\t\t\t0\t0\t1\t1\tp\t\tphases.yaml\n",
		"s4\tk\tfailed\t\t\tmany\t0\t1\t1\tp\t\tphases.yaml\n",
	}
	f, err := os.OpenFile(filepath.Join(st.Root, IndexName), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range forged {
		f.WriteString(line)
	}
	f.Close()
	for i := 0; i < 2; i++ {
		list, err := st.List()
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].ID != "s2" || list[1].ID != "s1" {
			t.Fatalf("List: %v, want s2 and s1 alone", list)
		}
	}
	said := warnings.String()
	if n := strings.Count(said, "\n"); n != len(forged) {
		t.Errorf("%d warnings for %d forged lines (listed twice), want one each:\n%s", n, len(forged), said)
	}
	for _, want := range []string{"index.tsv line 3 is not a line of the sessions index", `"../../../pwned\tk\tcompleted`, "line 8", "skipped"} {
		if !strings.Contains(said, want) {
			t.Errorf("warnings do not say %q:\n%s", want, said)
		}
	}
	// clean's way: every session listed goes, nothing outside the store.
	for _, s := range []string{"s1", "s2"} {
		if err := st.Remove(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CompactIndex(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("the folder outside the store: %v", err)
	}
	content, _ := os.ReadFile(filepath.Join(st.Root, IndexName))
	if strings.Contains(string(content), "pwned") {
		t.Errorf("the compacted index keeps a forged line:\n%s", content)
	}
}

// Issue 23, item 9: a kill -9 in the middle of writeAtomic left its
// .tmp-* file for good. A writer holds a lock on its temporary file until
// the file has its name; what no live writer holds is removed when the
// store is opened (its own folder) and when a session is opened for
// writing (the session's folder). A temporary file whose writer lives is
// left; a read-only open removes nothing.
func TestIssue23StaleTempFilesAreSwept(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	plant := func(rel string) string {
		path := filepath.Join(st.Root, filepath.FromSlash(rel))
		if err := os.WriteFile(path, []byte("half a snapshot"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	exists := func(path string) bool {
		_, err := os.Lstat(path)
		return err == nil
	}
	staleRoot, staleSession := plant(".tmp-0badc0ffee00"), plant("sessions/s1/.tmp-123456abcdef")
	// A live writer's: its lock is held.
	live := plant("sessions/s1/.tmp-live00000000")
	f, err := os.OpenFile(live, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if taken, err := tryLock(f); err != nil || !taken {
		t.Fatalf("locking the live writer's file: %v %v", taken, err)
	}
	if r, err := st.ReadSession("s1"); err != nil {
		t.Fatal(err)
	} else {
		r.Close()
	}
	if !exists(staleSession) {
		t.Fatal("a read-only open removed a file")
	}
	again, err := Open(st.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if exists(staleRoot) {
		t.Error("the store's stale .tmp- file is left after Open")
	}
	w, err := again.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if exists(staleSession) {
		t.Error("the session's stale .tmp- file is left after it was opened for writing")
	}
	if !exists(live) {
		t.Error("a live writer's .tmp- file was removed")
	}
}

// Issue 23, item 9: a sweep may meet a temporary file its writer has just
// made and not yet locked. Writes and sweeps at once never lose a write.
func TestIssue23WritesSurviveSweepsAtOnce(t *testing.T) {
	st := newStore(t)
	done := make(chan struct{})
	swept := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				swept <- n
				return
			default:
				n += st.sweepTemps("")
			}
		}
	}()
	for i := 0; i < 300; i++ {
		if err := st.writeAtomic("memory.json", []byte(strings.Repeat("x", i)), false); err != nil {
			close(done)
			<-swept
			t.Fatalf("write %d: %v", i, err)
		}
	}
	close(done)
	<-swept
	content, err := os.ReadFile(filepath.Join(st.Root, "memory.json"))
	if err != nil || len(content) != 299 {
		t.Fatalf("memory.json: %d bytes, %v; want the last write's 299", len(content), err)
	}
	names, _ := st.readDirNames("sessions")
	root, _ := os.ReadDir(st.Root)
	for _, e := range root {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			t.Errorf("%s left, %v", e.Name(), names)
		}
	}
}

// deadPID is the pid of a process that ran and was reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// heldByChild takes the key's lock naming holder, has a child process
// share the open lock file (as a child forked by the runner does until
// its exec), and drops the test's own descriptor: the lock is then held
// by the child alone. Closing the returned pipe ends the child.
func heldByChild(t *testing.T, st *Store, key string, holder Holder) (release func(), wait func()) {
	t.Helper()
	l, err := st.Lock(key, holder)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("cat")
	child.ExtraFiles = []*os.File{l.file}
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	l.Release()
	var once sync.Once
	release = func() { once.Do(func() { stdin.Close() }) }
	t.Cleanup(func() { release(); child.Wait() })
	return release, func() { child.Wait() }
}

// Issue 23, item 9: right after a kill -9, the next run was refused as
// "already running (pid N)", naming the dead, reaped runner: a child it
// had forked still held the lock's open file, until its exec dropped it
// (every file of the store is close-on-exec). When the holder the lock
// file names has ended, Lock waits for such a lock to go; one that stays
// is named as what it is, with the lock file to look for.
func TestIssue23LockOfADeadRunnerHeldByItsChildIsWaitedFor(t *testing.T) {
	st := newStore(t)
	dead := deadPID(t)
	release, _ := heldByChild(t, st, "k1", Holder{PID: dead, Session: "s1"})
	polls := 0
	l, err := st.lock("k1", Holder{PID: os.Getpid(), Session: "s2"}, time.Minute, func() {
		polls++
		release() // the child execs (or ends): the lock goes with it
	})
	if err != nil {
		t.Fatalf("Lock: %v; want the lock, once the dead runner's child dropped it", err)
	}
	l.Release()
	if polls == 0 {
		t.Error("the lock was free at once: the test did not hold it in a child")
	}

	// Held for good by the child of a dead runner: said so, not "already
	// running (pid N)".
	heldByChild(t, st, "k2", Holder{PID: dead, Session: "s1"})
	_, err = st.lock("k2", Holder{PID: os.Getpid()}, 0, func() {})
	var locked *LockedError
	if !errors.As(err, &locked) || !locked.Orphaned || strings.Contains(err.Error(), "already running") ||
		!strings.Contains(err.Error(), "has ended") || !strings.Contains(err.Error(), filepath.Join(st.Root, "locks")) {
		t.Errorf("Lock: %v; want the lock named held by what the ended run started", err)
	}

	// A live holder (another process) is refused at once, without
	// waiting.
	heldByChild(t, st, "k3", Holder{PID: os.Getppid(), Session: "s3"})
	_, err = st.lock("k3", Holder{PID: os.Getpid()}, time.Minute, func() { t.Error("waited for a live holder") })
	if !errors.As(err, &locked) || locked.Orphaned || !strings.Contains(err.Error(), "already running") {
		t.Errorf("Lock: %v; want already running", err)
	}
}

// A process that released a lock and takes it again (a fleet worker's
// next activity of the session, a watcher's next resume) is not told
// that it is itself running the session when a child another goroutine
// is starting still shares the lock's file, between its fork and its
// exec: Lock waits for that child as for a dead runner's. A lock this
// process does hold is refused at once.
func TestLockReleasedHereAndHeldByAChildIsWaitedFor(t *testing.T) {
	st := newStore(t)
	release, _ := heldByChild(t, st, "k1", Holder{PID: os.Getpid(), Session: "s1"})
	polls := 0
	l, err := st.lock("k1", Holder{PID: os.Getpid(), Session: "s2"}, time.Minute, func() {
		polls++
		release() // the child execs: the lock goes with it
	})
	if err != nil {
		t.Fatalf("Lock: %v; want the lock, once the child dropped it", err)
	}
	if polls == 0 {
		t.Error("the lock was free at once: the test did not hold it in a child")
	}
	_, err = st.lock("k1", Holder{PID: os.Getpid(), Session: "s3"}, time.Minute, func() { t.Error("waited for a lock this process holds") })
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Orphaned || !strings.Contains(err.Error(), "already running") {
		t.Errorf("Lock of a lock held here: %v; want already running", err)
	}
	l.Release()
	again, err := st.lock("k1", Holder{PID: os.Getpid(), Session: "s4"}, 0, func() {})
	if err != nil {
		t.Fatalf("Lock after its release here: %v", err)
	}
	again.Release()
}

// Issue 23, item 9: a process the runner starts must not keep its lock
// (or any file of the store) past its exec: they are all close-on-exec.
func TestIssue23StoreFilesAreCloseOnExec(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	l, err := st.Lock("k", Holder{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*os.File{l.file, x.events, st.dir} {
		flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("%s: flags %#x, %v; want close-on-exec", f.Name(), flags, err)
		}
	}
	child := exec.Command("cat")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); child.Wait() }()
	l.Release()
	again, err := st.lock("k", Holder{PID: os.Getpid()}, 0, func() {})
	if err != nil {
		t.Fatalf("Lock while a child started under the lock lives: %v", err)
	}
	again.Release()
}

// heldBack serves an archive but its last tail bytes, signals starved
// when asked for more, and serves the rest once fed is closed: the import
// reading it has then read (and checked) all the rest.
type heldBack struct {
	data         []byte
	tail         int
	starved, fed chan struct{}
	starvedOnce  sync.Once
	off          int
}

func (h *heldBack) Read(p []byte) (int, error) {
	limit := len(h.data) - h.tail
	select {
	case <-h.fed:
		limit = len(h.data)
	default:
	}
	if h.off >= limit && limit < len(h.data) {
		h.starvedOnce.Do(func() { close(h.starved) })
		<-h.fed
		limit = len(h.data)
	}
	if h.off >= limit {
		return 0, io.EOF
	}
	n := copy(p, h.data[h.off:limit])
	h.off += n
	return n, nil
}

// folderMade watches dir and closes the channel it returns when an entry
// whose name starts with prefix is made there.
func folderMade(t *testing.T, dir, prefix string) <-chan struct{} {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Add(dir); err != nil {
		t.Fatal(err)
	}
	made := make(chan struct{})
	go func() {
		defer w.Close()
		for ev := range w.Events {
			if ev.Has(fsnotify.Create) && strings.HasPrefix(filepath.Base(ev.Name), prefix) {
				close(made)
				return
			}
		}
	}()
	return made
}

// Issue 23, item 7: two imports of the same archive at once: the second
// to finish found the session there ("it was made while the archive was
// read") and said it "differs from the one imported", exit 2, though it
// was the same. The same files are the same session: the second is
// Unchanged. A session with other files made meanwhile is still refused.
func TestIssue23ConcurrentIdenticalImportsAreIdempotent(t *testing.T) {
	_, archive := exportedSession(t)
	to := importStore(t)
	first := &heldBack{data: archive, tail: 8, starved: make(chan struct{}), fed: make(chan struct{})}
	type outcome struct {
		got Imported
		err error
	}
	made := folderMade(t, filepath.Join(to.Root, "sessions"), ".new-import-")
	done := make(chan outcome, 1)
	go func() {
		got, err := to.Import(context.Background(), first, importOptions())
		done <- outcome{got, err}
	}()
	<-made // past its check for the session: it was not there
	second, err := to.Import(context.Background(), bytes.NewReader(archive), importOptions())
	if err != nil || second.Unchanged {
		t.Fatalf("the second import: %+v, %v; want it imported", second, err)
	}
	close(first.fed)
	o := <-done
	if o.err != nil || !o.got.Unchanged || o.got.Meta.ID != testID {
		t.Fatalf("the first import, finishing last: %+v, %v; want Unchanged, the same session", o.got, o.err)
	}
	names, _ := to.readDirNames("sessions")
	if len(names) != 1 || names[0] != testID {
		t.Errorf("sessions folder: %v, want the session alone", names)
	}
}

// Issue 23, item 7: an import interrupted (Ctrl+C) left its
// .new-import-* folder for good, gigabytes of it. Cancelled, even while
// its input is silent (a pipe), it stops at once and removes its folder.
func TestIssue23InterruptedImportLeavesNothing(t *testing.T) {
	_, archive := exportedSession(t)
	to := importStore(t)
	r := &heldBack{data: archive, tail: 8, starved: make(chan struct{}), fed: make(chan struct{})}
	defer close(r.fed)
	ctx, cancel := context.WithCancel(context.Background())
	made := folderMade(t, filepath.Join(to.Root, "sessions"), ".new-import-")
	done := make(chan error, 1)
	go func() {
		_, err := to.Import(ctx, r, importOptions())
		done <- err
	}()
	<-made
	<-r.starved // and it waits on its input, which says nothing more
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Import: %v, want context.Canceled", err)
	}
	if names, _ := to.readDirNames("sessions"); len(names) != 0 {
		t.Errorf("left behind: %v", names)
	}
}

// Issue 23, item 7: a kill -9 of an import (or of a run making its
// session) leaves a .new- folder. The next Open of the store removes
// those no live process owns; one being made now is left.
func TestIssue23StaleNewFoldersAreSweptAtOpen(t *testing.T) {
	st := newStore(t)
	for _, n := range []string{".new-import-0a1b2c3d4e5f", ".new-20261125-093000123-a1b2c3"} {
		if err := os.MkdirAll(filepath.Join(st.Root, "sessions", n, "transcripts", "design"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(st.Root, "sessions", n, "transcripts", "design", "1-agent.log"), []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	live, err := st.mkdirOwned("sessions/.new-import-live00000000")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	again, err := Open(st.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	names, _ := again.readDirNames("sessions")
	if len(names) != 1 || names[0] != ".new-import-live00000000" {
		t.Errorf("sessions folder after Open: %v, want the live import's folder alone", names)
	}
}

// Issue 23, item 7: clean removes the .new- folders older than an hour;
// an import of gigabytes may take longer. One whose import still runs is
// left.
func TestIssue23CleanLeavesALiveImportsFolder(t *testing.T) {
	st := newStore(t)
	live, err := st.mkdirOwned("sessions/.new-import-live00000000")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead := filepath.Join(st.Root, "sessions", ".new-import-dead00000000")
	if err := os.Mkdir(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{dead, filepath.Join(st.Root, "sessions", ".new-import-live00000000")} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := st.RemoveUnfinished(time.Hour); err != nil || n != 1 {
		t.Fatalf("RemoveUnfinished: %d, %v; want the dead one alone", n, err)
	}
	names, _ := st.readDirNames("sessions")
	if len(names) != 1 || names[0] != ".new-import-live00000000" {
		t.Errorf("sessions folder: %v", names)
	}
}

// Issue 23, item 9: a pid names a process on its own machine only. The
// holder of a lock on a store shared between machines, whose pid is not
// running here, is not taken for ended: Lock refuses at once, without
// waiting.
func TestIssue23HolderOnAnotherMachineIsNotTakenForEnded(t *testing.T) {
	st := newStore(t)
	heldByChild(t, st, "k", Holder{PID: deadPID(t), Session: "s1", Host: thisHost() + "-elsewhere"})
	_, err := st.lock("k", Holder{PID: os.Getpid()}, time.Minute, func() { t.Error("waited for a holder on another machine") })
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Orphaned || locked.Holder.Host != thisHost()+"-elsewhere" {
		t.Errorf("Lock: %v; want already running, on the other machine", err)
	}
}
