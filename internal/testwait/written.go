package testwait

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Written waits until ok says yes, asking it again each time a file under
// root (a store, say) is made, written or removed: what a running session
// shows is read as its runner records it, on the event, not on a timer.
// Folders made under root are watched as they come; root must exist.
// Failsafe ends a wait that ok never ends, and fails the test with what it
// awaited.
func Written(t testing.TB, root, what string, ok func() bool) {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	watch := func(dir string) {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				w.Add(path) // a folder removed meanwhile is no loss
			}
			return nil
		})
	}
	watch(root)
	timeout := time.After(Failsafe)
	for !ok() {
		select {
		case e := <-w.Events:
			// Whatever else came meanwhile is answered by the same
			// question.
			for more := true; more; {
				if e.Has(fsnotify.Create) {
					if info, err := os.Stat(e.Name); err == nil && info.IsDir() {
						watch(e.Name)
					}
				}
				select {
				case e = <-w.Events:
				default:
					more = false
				}
			}
		case err := <-w.Errors:
			t.Fatalf("watching %s: %v", root, err)
		case <-timeout:
			t.Fatalf("%s: not there after %v of writes under %s", what, Failsafe, root)
		}
	}
}
