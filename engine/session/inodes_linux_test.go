package session_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pipeline-dev/pipeline/engine"
)

// mostInodesOfARun is what the session side of a run of one step that
// prints nothing makes: the session's folder, meta.json and events.jsonl
// (its stop's snapshot is in its log; its transcripts are made at their
// first byte). On a disk such as
// ext4, each inode made costs time in proportion to those deleted lately
// near it, and each one deleted makes the next runs' dearer.
const mostInodesOfARun = 3

// inodes lists every file and folder under root by inode.
func inodes(t *testing.T, root string) map[uint64]string {
	t.Helper()
	found := map[uint64]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		found[info.Sys().(*syscall.Stat_t).Ino] = path
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// dirWatch is inotify on a few folders: what is made, moved in, moved out
// and deleted in each, as the kernel queued it.
type dirWatch struct {
	fd    int
	dirs  map[int32]string
	names map[string]bool // what each folder holds, by path
}

func newDirWatch(t *testing.T) *dirWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return &dirWatch{fd: fd, dirs: map[int32]string{}, names: map[string]bool{}}
}

// add watches dir, from what it holds now.
func (w *dirWatch) add(t *testing.T, dir string) {
	t.Helper()
	wd, err := unix.InotifyAddWatch(w.fd, dir, unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO|unix.IN_ONLYDIR)
	if err != nil {
		t.Fatal(err)
	}
	w.dirs[int32(wd)] = dir
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		w.names[filepath.Join(dir, e.Name())] = true
	}
}

// until reads the events queued up to the one of marker's making (the
// kernel queues them in order), and returns the paths made (IN_CREATE)
// and, said as such, every inode deleted: unlinked, or replaced by a
// rename over its name.
func (w *dirWatch) until(t *testing.T, marker string) (made, deleted []string) {
	t.Helper()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			path := filepath.Join(w.dirs[ev.Wd], strings.TrimRight(string(nameBytes), "\x00"))
			switch {
			case path == marker:
				return made, deleted
			case ev.Mask&unix.IN_CREATE != 0:
				made = append(made, path)
				w.names[path] = true
			case ev.Mask&unix.IN_MOVED_TO != 0:
				if w.names[path] {
					deleted = append(deleted, "replaced by a rename: "+path)
				}
				w.names[path] = true
			case ev.Mask&unix.IN_MOVED_FROM != 0:
				delete(w.names, path)
			case ev.Mask&unix.IN_DELETE != 0:
				deleted = append(deleted, "unlinked: "+path)
				delete(w.names, path)
			}
		}
	}
}

// The session side of a run of one step (open, the step's process group
// recorded and cleared, the events, close) makes at most
// mostInodesOfARun inodes, and deletes none: no temporary file is made
// and unlinked (the step's process group is kept in the lock's holder,
// rewritten in place), no file is replaced by a rename, none is made at
// close (the memory lock is the session folder's own). Counted from what
// the store holds before and after, and from inotify's events on its
// folders (a file made and deleted in between leaves nothing to list).
func TestARunMakesFewInodesAndDeletesNone(t *testing.T) {
	p := newProject(t, oneTrueStep)
	runStep := func(watch func(dir string)) {
		o := runRequest
		o.File, o.Plan = p.file, p.plan
		s := p.mustOpen(o)
		watch(s.X.Dir)
		now := time.Now()
		if _, err := s.Apply(s.Start(now)); err != nil {
			t.Fatal(err)
		}
		s.StepProcess(1 << 30)
		s.StepProcess(0)
		if _, err := s.Apply(engine.StepFinished{At: now, Result: engine.StepResult{Elapsed: time.Millisecond}}); err != nil {
			t.Fatal(err)
		}
		if s.State().Status != engine.StatusCompleted {
			t.Fatalf("the run ended %s", s.State().Status)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The store as a project has it: made, and a run before.
	runStep(func(string) {})

	root := p.st.Root
	before := inodes(t, root)
	w := newDirWatch(t)
	for _, dir := range []string{root, filepath.Join(root, "sessions"), filepath.Join(root, "locks")} {
		w.add(t, dir)
	}
	runStep(func(dir string) {
		// What Open made in the new folder is listed after; what the
		// rest of the run makes or deletes there, inotify tells.
		w.add(t, dir)
		if _, err := os.Stat(filepath.Join(dir, "transcripts")); err == nil {
			w.add(t, filepath.Join(dir, "transcripts")) // made at once, or not until a step writes
		}
	})
	marker := filepath.Join(root, "marker")
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	madeSeen, deleted := w.until(t, marker)
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	after := inodes(t, root)
	var made []string
	for ino, path := range after {
		if _, ok := before[ino]; !ok {
			made = append(made, path)
		}
	}
	for ino, path := range before {
		if after[ino] != path {
			t.Errorf("%s (inode %d) was deleted or replaced: now %q", path, ino, after[ino])
		}
	}
	if len(made) > mostInodesOfARun {
		t.Errorf("the run made %d inodes, more than %d: %q", len(made), mostInodesOfARun, made)
	}
	// A name made and gone since was a file made and deleted, or moved
	// away (the new session's folder, made as .new-ID and renamed; a
	// temporary file renamed into place, over nothing): inotify told.
	if len(deleted) > 0 {
		t.Errorf("the run deleted %d inodes: %q", len(deleted), deleted)
	}
	t.Logf("the run made %d inodes: %q (inotify saw %q made after the open)", len(made), made, madeSeen)
}
