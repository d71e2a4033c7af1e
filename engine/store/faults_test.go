package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 9: a torn last line of events.jsonl (a machine crash) was skipped
// on read, but the next append, after a resume, was glued onto it: that
// event became unreadable and the session with it.
func TestAppendAfterATornLastLineIsNotGluedToIt(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := x.Append("Noted", []byte(fmt.Sprintf(`{"Notes":"%d"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	x.Close()
	log := filepath.Join(x.Dir, "events.jsonl")
	whole, _ := os.ReadFile(log)
	appendTo(t, log, `{"seq":4,"type":"No`)

	// Read, it is skipped and stays.
	r, err := st.ReadSession("s1")
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got, _ := os.ReadFile(log); len(got) != len(whole)+len(`{"seq":4,"type":"No`) {
		t.Fatalf("reading the session changed its log: %q", got)
	}
	// Opened for writing (under its lock), it is cut, and the next event
	// is a line of its own.
	x, err = st.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if got, _ := os.ReadFile(log); !bytes.Equal(got, whole) {
		t.Errorf("the log opened for writing is %q, want its whole lines %q", got, whole)
	}
	if seq, err := x.Append("Noted", []byte(`{"Notes":"after"}`)); err != nil || seq != 4 {
		t.Fatalf("append: %d %v", seq, err)
	}
	var seqs []int64
	if err := x.Events(0, func(seq int64, _ string, _ []byte) error {
		seqs = append(seqs, seq)
		return nil
	}); err != nil {
		t.Fatalf("the log after a torn line and an append: %v", err)
	}
	if fmt.Sprint(seqs) != "[1 2 3 4]" {
		t.Errorf("events %v, want [1 2 3 4]", seqs)
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Issue 9, the same in the index: a torn last line of index.tsv made the
// next summary appended to it unreadable, and a session with no other
// line vanished from sessions.
func TestIndexAppendAfterATornLastLineIsNotGluedToIt(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	index := filepath.Join(st.Root, indexName)
	appendTo(t, index, "s0\tk\tpaus")
	y, err := st.Create(Meta{ID: "s2", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	y.Close()
	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "s2,s1" {
		t.Errorf("sessions listed after a torn index line: %v, want s2,s1", ids)
	}
	content, _ := os.ReadFile(index)
	for n, line := range strings.Split(strings.TrimSuffix(string(content), "\n"), "\n") {
		if _, _, ok := parseIndexLine([]byte(line)); !ok {
			t.Errorf("index line %d is not readable: %q", n+1, line)
		}
	}
}

// Issue 9: clean's compaction read the index, then replaced it: every line
// appended in between (a session made, a status changed) was lost, and
// sessions vanished or showed an old status. Compaction and appends now
// exclude each other.
func TestCompactIndexLosesNoLineAppendedDuringIt(t *testing.T) {
	st := newStore(t)
	const writers, sessionsEach = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*sessionsEach*2+1)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := st.CompactIndex(); err != nil {
				errs <- err
				return
			}
		}
	}()
	var made sync.WaitGroup
	for w := 0; w < writers; w++ {
		made.Add(1)
		go func() {
			defer made.Done()
			for i := 0; i < sessionsEach; i++ {
				id := fmt.Sprintf("s%d-%02d", w, i)
				x, err := st.Create(Meta{ID: id, Key: "k"})
				if err != nil {
					errs <- err
					return
				}
				if err := x.WriteSnapshot(0, []byte(`{}`), Summary{ID: id, Key: "k", Status: "completed"}); err != nil {
					errs <- err
				}
				x.Close()
			}
		}()
	}
	made.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	list, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != writers*sessionsEach {
		t.Fatalf("%d sessions listed, want %d", len(list), writers*sessionsEach)
	}
	for _, s := range list {
		if s.Status != "completed" {
			t.Errorf("%s listed %s, want completed", s.ID, s.Status)
		}
	}
}

// A session removed is never listed again: a writer that still had it
// open (complete, racing clean) gets ErrRemoved instead of a line.
func TestRemovedSessionGetsNoIndexLine(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := st.Remove("s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(x.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the folder is still there: %v", err)
	}
	if _, err := x.Append("Completed", []byte(`{}`)); !errors.Is(err, ErrRemoved) {
		t.Errorf("append to a removed session: %v, want ErrRemoved", err)
	}
	if err := x.WriteSnapshot(1, []byte(`{}`), Summary{ID: "s1", Key: "k", Status: "completed"}); !errors.Is(err, ErrRemoved) {
		t.Errorf("snapshot of a removed session: %v, want ErrRemoved", err)
	}
	if list, _ := st.List(); len(list) != 0 {
		t.Errorf("listed after removal: %+v", list)
	}
	if _, err := os.Stat(x.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("writing a removed session made its folder again: %v", err)
	}
	if err := st.Remove("s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a second removal: %v, want ErrNotFound", err)
	}
}

// Issue 9: the store deleted under a live run. The event log, still open,
// took every append into a file no longer anywhere, and the transcripts
// made the session's folders again: half a session recreated and a run
// reporting success.
func TestDeletedStoreTakesNoMoreWrites(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := x.Append("Started", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(st.Root); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Append("StepStarted", []byte(`{}`)); !errors.Is(err, ErrRemoved) {
		t.Errorf("append after the store was deleted: %v, want ErrRemoved", err)
	}
	if f, err := x.CreateTranscript("build", 1, "run"); err == nil {
		if _, err := f.WriteString("output\n"); err == nil {
			t.Error("a transcript was written in a deleted store")
		}
		f.Close()
	}
	if err := x.WriteSnapshot(1, []byte(`{}`), Summary{ID: "s1"}); !errors.Is(err, ErrRemoved) {
		t.Errorf("snapshot after the store was deleted: %v, want ErrRemoved", err)
	}
	if _, err := os.Stat(st.Root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted store is back: %v", err)
	}
}

// Issue 9: a lock file replaced by a symbolic link made run write its
// holder into the file the link pointed to. No file or folder of the
// store is reached through a link.
func TestSymlinksInsideTheStoreAreNeverFollowed(t *testing.T) {
	const content = "the user's own file\n"
	cases := []struct {
		name string
		link func(st *Store, x *Session) string // the path made a link
		use  func(st *Store, x *Session) error
	}{
		{"lock", func(st *Store, _ *Session) string { return filepath.Join(st.Root, "locks", "k.lock") },
			func(st *Store, _ *Session) error {
				l, err := st.Lock("k", Holder{PID: 1})
				if err == nil {
					l.Release()
				}
				return err
			}},
		{"locks folder", func(st *Store, _ *Session) string { return filepath.Join(st.Root, "locks") },
			func(st *Store, _ *Session) error {
				l, err := st.Lock("k", Holder{PID: 1})
				if err == nil {
					l.Release()
				}
				return err
			}},
		{"index", func(st *Store, _ *Session) string { return filepath.Join(st.Root, indexName) },
			func(st *Store, x *Session) error {
				return x.WriteSnapshot(0, []byte(`{}`), Summary{ID: x.Meta.ID, Key: "k", Status: "paused"})
			}},
		{"index lock", func(st *Store, _ *Session) string { return filepath.Join(st.Root, indexLockName) },
			func(st *Store, _ *Session) error { return st.CompactIndex() }},
		{"events", func(_ *Store, x *Session) string { return filepath.Join(x.Dir, "events.jsonl") },
			func(st *Store, x *Session) error {
				y, err := st.Session(x.Meta.ID)
				if err == nil {
					_, err = y.Append("Noted", []byte(`{}`))
					y.Close()
				}
				return err
			}},
		{"state", func(_ *Store, x *Session) string { return filepath.Join(x.Dir, "state.json") },
			func(_ *Store, x *Session) error { _, _, err := x.ReadSnapshot(); return err }},
		{"meta", func(_ *Store, x *Session) string { return filepath.Join(x.Dir, "meta.json") },
			func(st *Store, x *Session) error { _, err := st.Find(x.Meta.ID); return err }},
		{"session folder", func(_ *Store, x *Session) string { return x.Dir },
			func(st *Store, x *Session) error {
				y, err := st.Session(x.Meta.ID)
				if err == nil {
					_, err = y.Append("Noted", []byte(`{}`))
					y.Close()
				}
				return err
			}},
		{"sessions folder", func(st *Store, _ *Session) string { return filepath.Join(st.Root, "sessions") },
			func(st *Store, _ *Session) error {
				x, err := st.Create(Meta{ID: "s2", Key: "k"})
				if err == nil {
					x.Close()
				}
				return err
			}},
		{"transcripts folder", func(_ *Store, x *Session) string { return filepath.Join(x.Dir, "transcripts") },
			func(_ *Store, x *Session) error {
				f, err := x.CreateTranscript("build", 1, "run")
				if err == nil {
					_, err = f.WriteString("output\n")
					err = errors.Join(err, f.Close())
				}
				return err
			}},
		{"transcript", func(_ *Store, x *Session) string { return x.TranscriptPath("build", 1, "run") },
			func(_ *Store, x *Session) error {
				f, err := x.CreateTranscript("build", 1, "run")
				if err == nil {
					_, err = f.WriteString("output\n")
					err = errors.Join(err, f.Close())
				}
				return err
			}},
		{"pause request", func(_ *Store, x *Session) string { return filepath.Join(x.Dir, "pause-request.txt") },
			func(_ *Store, x *Session) error { _, err := x.ReadFile("pause-request.txt"); return err }},
		{"step process", func(_ *Store, x *Session) string { return filepath.Join(x.Dir, "step-process") },
			func(_ *Store, x *Session) error { _, err := x.ReadFile("step-process"); return err }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := newStore(t)
			x, err := st.Create(Meta{ID: "s1", Key: "k"})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if err := os.MkdirAll(filepath.Join(x.Dir, "transcripts", "build"), 0o700); err != nil {
				t.Fatal(err)
			}
			if l, err := st.Lock("k", Holder{PID: 1}); err == nil {
				l.Release()
			}
			if err := os.WriteFile(filepath.Join(st.Root, indexLockName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			outside := filepath.Join(t.TempDir(), "victim")
			target := outside
			if err := os.MkdirAll(outside, 0o700); err != nil {
				t.Fatal(err)
			}
			path := c.link(st, x)
			if info, err := os.Stat(path); err == nil && !info.IsDir() || errors.Is(err, fs.ErrNotExist) {
				// A file's link points to a file of the user's.
				target = filepath.Join(outside, "file")
				if err := os.WriteFile(target, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.RemoveAll(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			before := treeOf(t, outside)
			err = c.use(st, x)
			if !errors.Is(err, ErrSymlink) {
				t.Errorf("through a link at %s: %v, want ErrSymlink", path, err)
			}
			if err != nil && !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("the error does not say why: %v", err)
			}
			if after := treeOf(t, outside); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("the link's target changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// Files the store replaces whole (a snapshot, the spec kept at a pause)
// replace a link put in their place, never what it points to.
func TestReplacingAFileReplacesALinkNotItsTarget(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"spec-at-pause.md", "state.json"} {
		if err := os.Symlink(victim, filepath.Join(x.Dir, file)); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.WriteFile("spec-at-pause.md", []byte("spec")); err != nil {
		t.Fatal(err)
	}
	if err := x.WriteSnapshot(0, []byte(`{}`), Summary{ID: "s1", Key: "k", Status: "paused"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "mine" {
		t.Errorf("the link's target now holds %q", got)
	}
	for _, file := range []string{"spec-at-pause.md", "state.json"} {
		if info, err := os.Lstat(filepath.Join(x.Dir, file)); err != nil || !info.Mode().IsRegular() {
			t.Errorf("%s is not a plain file now: %v %v", file, info, err)
		}
	}
}

func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		content := ""
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(path)
			content = string(b)
		}
		tree[path] = fmt.Sprintf("%v %q", info.Mode(), content)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// Issue 9: the store's folder is refused when it is not the user's own,
// with the reason: another user who can write it can plant links.
func TestStoreFolderMustBePrivate(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".pipeline")
	if _, err := Open(root); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o770); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func(string) (*Store, error){Open, OpenExisting} {
		if _, err := open(root); err == nil || !strings.Contains(err.Error(), "can be written by others (mode 0770)") {
			t.Errorf("a group-writable store: %v", err)
		}
	}
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}

	// Another user's folder: one this test makes as root, or else the
	// root folder, root's.
	other := "/"
	if os.Geteuid() == 0 {
		other = filepath.Join(t.TempDir(), "theirs")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(other); err == nil || !strings.Contains(err.Error(), "not to you") {
		t.Errorf("another user's folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(other, "sessions")); err == nil && other != "/" {
		t.Error("Open made a sessions folder in another user's folder")
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file); err == nil || !strings.Contains(err.Error(), "is not a folder") {
		t.Errorf("a file for a store: %v", err)
	}
}

// The index written past a file size limit (as on a full disk) keeps its
// whole lines and no part of the line that failed; a removal whose
// tombstone cannot be written puts the folder back.
func TestIndexWriteCutShortLeavesTheIndexWhole(t *testing.T) {
	root := os.Getenv("PIPELINE_STORE_TEST_DIR")
	if isChild(t) {
		st, err := Open(root)
		if err != nil {
			t.Fatal(err)
		}
		x, err := st.Session("s1")
		if err != nil {
			t.Fatal(err)
		}
		lift := limitFileSize(t)
		long := Summary{ID: "s1", Key: "k", Status: "paused", PauseReason: strings.Repeat("r", 2*fileSizeLimit)}
		fmt.Printf("WriteSnapshot: %v\n", x.WriteSnapshot(0, []byte(`{}`), long))
		// Fill the index up to the limit, then remove.
		for i := 0; ; i++ {
			if err := st.index(Summary{ID: "s1", Key: "k", Status: "completed", Phase: fmt.Sprint(i)}); err != nil {
				break
			}
		}
		fmt.Printf("Remove: %v\n", st.Remove("s1"))
		lift()
		x.Close()
		return
	}
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	out, err := childCommand(t, "PIPELINE_STORE_TEST_DIR="+st.Root).Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "WriteSnapshot: updating the index: write ") || !strings.Contains(string(out), "Remove: write ") {
		t.Fatalf("the index writes did not fail past the limit; child said:\n%s", out)
	}
	content, err := os.ReadFile(filepath.Join(st.Root, indexName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(content, []byte("\n")) {
		t.Errorf("the index ends in part of a line: %q", content[max(0, len(content)-40):])
	}
	for n, line := range strings.Split(strings.TrimSuffix(string(content), "\n"), "\n") {
		if _, _, ok := parseIndexLine([]byte(line)); !ok {
			t.Errorf("index line %d is not readable: %q", n+1, line)
		}
	}
	list, err := st.List()
	if err != nil || len(list) != 1 || list[0].Status != "completed" {
		t.Errorf("listed after the failed removal: %+v %v, want s1, completed", list, err)
	}
	if _, err := os.Stat(filepath.Join(st.Root, "sessions", "s1", "meta.json")); err != nil {
		t.Errorf("the folder of a removal that failed is not back: %v", err)
	}
}

// Remove renames the folder away before deleting it: a removal cut short
// is finished by the next clean, and the index does not list it.
func TestRemoveUnfinishedFinishesARemovalCutShort(t *testing.T) {
	st := newStore(t)
	x, err := st.Create(Meta{ID: "s1", Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	// Cut short between the rename and the tombstone.
	if err := os.Rename(x.Dir, filepath.Join(st.Root, "sessions", removedPrefix+"s1")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RemoveUnfinished(time.Hour); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(filepath.Join(st.Root, "sessions")); len(left) != 0 {
		t.Errorf("left in sessions: %v", left)
	}
	if list, _ := st.List(); len(list) != 0 {
		t.Errorf("listed: %+v", list)
	}
}
