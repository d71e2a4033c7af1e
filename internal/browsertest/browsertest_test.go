//go:build browser

package browsertest_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pipeline-dev/pipeline/internal/browsertest"
)

func start(t *testing.T) *browsertest.Browser {
	t.Helper()
	exe, err := browsertest.Exe()
	if err != nil {
		t.Fatal(err)
	}
	b, err := browsertest.Start(exe)
	if err != nil {
		t.Fatal(err)
	}
	// Debian's Chromium keeps a singleton: where it goes is what these
	// tests are about.
	if b.Singleton == "" {
		t.Fatalf("%s keeps no singleton folder", exe)
	}
	if dir := filepath.Dir(b.Singleton); dir != b.TempDir {
		t.Fatalf("singleton folder %s: want it in the browser's TMPDIR %s", b.Singleton, b.TempDir)
	}
	return b
}

func gone(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s is still there (%v)", path, err)
	}
}

// A browser closed cleanly removes its singleton folder itself, and Close
// removes its TMPDIR.
func TestClosedBrowserLeavesNoFolder(t *testing.T) {
	b := start(t)
	if err := chromedp.Do(b.Tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	gone(t, b.Singleton)
	gone(t, b.TempDir)
}

// A browser killed (as when a test binary times out) cannot remove its
// singleton folder; it made it in its own TMPDIR, which Close removes.
func TestKilledBrowserLeavesNoFolder(t *testing.T) {
	b := start(t)
	proc := chromedp.FromContext(b.Tab).Browser.Process()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(b.Singleton); err != nil {
		t.Fatalf("the killed browser's singleton folder: %v; want it left for Close to remove", err)
	}
	if err := b.Close(); err == nil {
		t.Error("Close of a killed browser: no error, want one saying the close was not clean")
	} else {
		t.Logf("Close: %v", err)
	}
	gone(t, b.Singleton)
	gone(t, b.TempDir)
}
