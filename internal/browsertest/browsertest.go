// Package browsertest starts the headless Chromium that the dashboard's
// and the telemetry page's tests (and cmd/bench -ui) drive with chromedp,
// so that it leaves nothing in the user's temp folder.
//
// Chromium keeps its singleton socket in a folder it makes in the temp
// folder (org.chromium.Chromium.XXXXXX) and removes it only when it exits
// cleanly; chromedp cancelling its allocator kills the browser, and the
// folder stays. So each browser here gets a temp folder of its own
// (TMPDIR), is closed cleanly (chromedp.Cancel on its first tab) before
// its allocator is cancelled, and Close removes the folder, whatever the
// browser left in it. Start fails when the browser made its singleton
// folder anywhere else (it would be in the user's temp folder), and Close
// says so when the folder outlived the close.
package browsertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/pipeline-dev/pipeline/internal/testwait"
)

// Exe is the Chromium (or Chrome) to drive: PIPELINE_CHROMIUM, else
// Debian's /usr/bin/chromium, which make test installs.
func Exe() (string, error) {
	exe := os.Getenv("PIPELINE_CHROMIUM")
	if exe == "" {
		exe = "/usr/bin/chromium"
	}
	if _, err := os.Stat(exe); err != nil {
		return "", fmt.Errorf("no Chromium at %s (%v): install it with scripts/install-chromium.sh, or name one in PIPELINE_CHROMIUM", exe, err)
	}
	return exe, nil
}

// Browser is a headless Chromium started by Start, with its first tab.
type Browser struct {
	// Tab is the browser's first tab; the browser lives as long as it.
	Tab context.Context
	// TempDir is the browser's TMPDIR, which Close removes.
	TempDir string
	// Singleton is the folder holding the browser's singleton socket, ""
	// when the browser keeps none.
	Singleton   string
	cancelTab   context.CancelFunc
	cancelAlloc context.CancelFunc
}

// singletonSocket is the longest path of the socket under the browser's
// TMPDIR; a Unix socket's path has at most 107 bytes.
const singletonSocket = "/org.chromium.Chromium.XXXXXX/SingletonSocket"

// Start starts exe headless, with a TMPDIR of its own made in the
// system's temp folder (t.TempDir's paths are too long for the socket in
// it), and opens its first tab. opts add to the options every caller
// shares (window size and the like). It fails when the browser's
// singleton folder is not in that TMPDIR.
func Start(exe string, opts ...chromedp.ExecAllocatorOption) (*Browser, error) {
	tmp, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		return nil, err
	}
	if len(tmp+singletonSocket) > 107 {
		os.Remove(tmp)
		return nil, fmt.Errorf("the temp folder's path %s is too long for Chromium's singleton socket in it: set TMPDIR to a shorter one", tmp)
	}
	all := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Env("TMPDIR="+tmp))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(all, opts...)...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	b := &Browser{Tab: tab, TempDir: tmp, cancelTab: cancelTab, cancelAlloc: cancelAlloc}
	// The first action starts the browser, which lives as long as tab:
	// that context has no timeout.
	if err := chromedp.Do(tab); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", exe, err), b.Close())
	}
	if b.Singleton, err = singletonFolder(chromedp.FromContext(tab).Browser.Process()); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	if b.Singleton != "" && filepath.Dir(b.Singleton) != tmp {
		return nil, errors.Join(fmt.Errorf("%s made its singleton folder %s outside the TMPDIR it was given, %s: it would stay there when the browser is killed", exe, b.Singleton, tmp), b.Close())
	}
	return b, nil
}

// Close closes the browser cleanly (killing it after testwait.Failsafe),
// waits for it to exit and removes its TMPDIR. It says when the close was
// not clean or left the singleton folder; nothing stays either way.
func (b *Browser) Close() error {
	var errs []error
	if chromedp.FromContext(b.Tab).Browser != nil {
		ctx, cancel := context.WithTimeout(b.Tab, testwait.Failsafe)
		if err := chromedp.Cancel(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing Chromium: %w", err))
		}
		cancel()
	}
	// Both wait for the browser to exit and chromedp to remove its profile.
	b.cancelTab()
	b.cancelAlloc()
	if b.Singleton != "" {
		if _, err := os.Lstat(b.Singleton); !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("the browser left its singleton folder %s (%v): it did not exit cleanly", b.Singleton, err))
		}
	}
	if err := os.RemoveAll(b.TempDir); err != nil {
		errs = append(errs, fmt.Errorf("removing Chromium's TMPDIR: %w", err))
	}
	return errors.Join(errs...)
}

// New starts a browser for t (see Start), closes it when t ends, and
// returns its first tab; t fails when the browser cannot start, does not
// close cleanly or leaves its singleton folder.
func New(t testing.TB, opts ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	exe, err := Exe()
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(exe, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b.Tab
}

// singletonFolder is the folder of the running browser proc's singleton
// socket: Chromium links SingletonSocket in its profile (the folder of
// its --user-data-dir, which chromedp makes) to the socket there. It is
// "" when the browser keeps no singleton, and on systems other than
// Linux, where /proc does not say the browser's command line.
func singletonFolder(proc *os.Process) (string, error) {
	if runtime.GOOS != "linux" || proc == nil {
		return "", nil
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(proc.Pid), "cmdline"))
	if err != nil {
		return "", fmt.Errorf("reading Chromium's command line: %w", err)
	}
	profile := ""
	for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
		if dir, ok := bytes.CutPrefix(arg, []byte("--user-data-dir=")); ok {
			profile = string(dir)
		}
	}
	if profile == "" {
		return "", fmt.Errorf("no --user-data-dir in the browser's command line %q", cmdline)
	}
	link, err := os.Readlink(filepath.Join(profile, "SingletonSocket"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Dir(link), nil
}
