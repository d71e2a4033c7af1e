package app

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"
)

// transcriptWatch watches a session's transcripts folder and its phases'
// folders for the readers that follow a running session (logs -f,
// attach). The folders are made with the first byte a step writes: until
// then the session's folder is watched, for the transcripts folder's
// making.
type transcriptWatch struct {
	*fsnotify.Watcher
	root string
	// waiting: root is not there yet, and the session's folder is
	// watched in its place.
	waiting bool
}

// watchTranscripts starts watching root, a session's transcripts folder.
func watchTranscripts(root string) (*transcriptWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	t := &transcriptWatch{Watcher: w, root: root}
	if err := t.start(); err != nil {
		w.Close()
		return nil, err
	}
	return t, nil
}

// start watches root and its folders or, root not there yet, the
// session's folder in its place.
func (t *transcriptWatch) start() error {
	err := t.addTree(t.root)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := t.Add(filepath.Dir(t.root)); err != nil {
		return err
	}
	t.waiting = true
	// Made between the two: its event was missed.
	if t.addTree(t.root) == nil {
		t.stopWaiting()
	}
	return nil
}

// addTree watches dir and the folders it holds now.
func (t *transcriptWatch) addTree(dir string) error {
	if err := t.Add(dir); err != nil {
		return err
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			t.Add(filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// stopWaiting ends the watch of the session's folder: root is there.
func (t *transcriptWatch) stopWaiting() {
	t.waiting = false
	t.Remove(filepath.Dir(t.root))
}

// folderMade watches the folder ev made (the transcripts folder, or a
// phase's), and reports whether it did: the files in it may have been
// written before the watch began, so the reader must look at them now.
func (t *transcriptWatch) folderMade(ev fsnotify.Event) bool {
	if !ev.Has(fsnotify.Create) || !t.inTranscripts(ev) {
		return false
	}
	info, err := os.Stat(ev.Name)
	if err != nil || !info.IsDir() {
		return false
	}
	if t.addTree(ev.Name) == nil && ev.Name == t.root && t.waiting {
		t.stopWaiting()
	}
	return true
}

// inTranscripts reports whether ev is of the transcripts folder or what
// it holds, not of another file of the session's folder.
func (t *transcriptWatch) inTranscripts(ev fsnotify.Event) bool {
	return ev.Name == t.root || strings.HasPrefix(ev.Name, t.root+string(filepath.Separator))
}
