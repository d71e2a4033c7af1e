package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pipeline-dev/pipeline/engine/store"
)

// A session goes to another machine, checkout or CI job in one of two
// ways: its store folder copied with the project (a CI cache or
// artifact of .pipeline/), whose paths are relative to the project
// (store.Format 2); or one session exported to a file and imported
// there (store.Export, store.Import). Either way its native agent
// session usually stays behind, in the agent CLI's own files of the
// first machine: the resumed step asks the CLI for it, the CLI says it
// is gone, and the step runs again in a fresh native session with the
// resume context (engine: StepResult.SessionLost).

// portableFiles are the files of a session's folder that go with it
// besides its log, snapshot and transcripts: the spec kept at its pause
// and at its start, and a replay's cues (the original's human
// interventions still to give). Not the step's process group nor a pause request: they name processes
// of the machine that wrote them.
var portableFiles = []string{SpecAtPauseFile, SpecHashFile, SpecAtStartFile, SpecAtStartHashFile, ReplayCuesFile}

// Export writes the session ref found as one archive to w (see
// store.Export), every file passed through the session's redaction once
// more: they were redacted when written, with the secrets of the
// environment then; this also hides those of the exporter's. A session
// that runs is refused: its files would be torn.
func Export(ref *Ref, w io.Writer, now time.Time) (store.Manifest, error) {
	if ref.Running() {
		holder, _ := ref.Store.Holder(ref.Key)
		return store.Manifest{}, refused("session %s is running (pid %d): pause it first (pipeline pause %s), or export it once it stops",
			ref.ID(), holder.PID, ref.ID())
	}
	state, _, err := ref.State()
	if err != nil {
		return store.Manifest{}, err
	}
	updated := ref.X.Meta.Created
	if list, err := ref.Store.List(); err == nil {
		for _, sum := range list {
			if sum.ID == ref.ID() {
				updated = sum.Updated
			}
		}
	}
	redactor := NewRedactor(ref.Plan)
	return ref.Store.Export(ref.ID(), w, store.ExportOptions{
		Summary: Summarize(ref.Plan, ref.X.Meta, state, updated),
		Files:   portableFiles,
		Filter:  func() store.Filter { return redactor.NewStream() },
		Now:     now,
	})
}

// ImportOptions say what Import takes.
type ImportOptions struct {
	// MaxSize bounds the bytes of the session's files; <= 0:
	// store.DefaultImportMaxSize.
	MaxSize int64
	// Replace replaces a session of the same id with other content.
	Replace bool
}

// Import reads an exported session from r into st. The same session
// already there is left as it is (Unchanged); another version of it is
// refused unless o.Replace, and replaced only while nothing runs it. An
// archive that is not an export, or not a safe one, is refused
// (*RefusedError): nothing is written.
//
// An interrupt (Ctrl+C, SIGTERM, SIGHUP) stops it: the folder it was
// writing goes, and the process then dies of the signal as it would have
// (exit 130 for Ctrl+C). ImportContext is Import for a caller that cancels
// it itself.
func Import(st *store.Store, r io.Reader, o ImportOptions) (store.Imported, error) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan os.Signal, 1)
	go func() {
		select {
		case sig := <-signals:
			stopped <- sig
			cancel()
		case <-ctx.Done():
			stopped <- nil
		}
	}()
	got, err := ImportContext(ctx, st, r, o)
	cancel()
	sig := <-stopped
	signal.Stop(signals)
	if s, ok := sig.(syscall.Signal); ok {
		dieOf(s)
	}
	return got, err
}

// dieOf ends the process by sig, as if it had not been caught: a shell
// sees a Ctrl+C (exit 130) and stops a script's loop. A signal ignored
// when the process started stays ignored: then dieOf returns.
func dieOf(sig syscall.Signal) {
	signal.Reset(sig)
	if signal.Ignored(sig) {
		return
	}
	syscall.Kill(os.Getpid(), sig)
	// The runtime takes the signal on another thread; should it not end
	// the process, the exit status says the same.
	time.Sleep(time.Second)
	os.Exit(128 + int(sig))
}

// ImportContext is Import, stopped by ctx: cancelled, the folder it was
// writing goes and it returns ctx's error.
func ImportContext(ctx context.Context, st *store.Store, r io.Reader, o ImportOptions) (store.Imported, error) {
	got, err := st.Import(ctx, r, store.ImportOptions{CheckID: checkFullID, Files: portableFiles, MaxSize: o.MaxSize,
		Replace: o.Replace, Holder: store.Holder{PID: os.Getpid(), Started: time.Now()}})
	var (
		archiveErr *store.ArchiveError
		exists     *store.ExistsError
		locked     *store.LockedError
	)
	switch {
	case errors.As(err, &archiveErr):
		return got, &RefusedError{Err: err, Message: "refused: " + archiveErr.Reason}
	case errors.As(err, &exists):
		return got, &RefusedError{Err: err, Message: fmt.Sprintf("%v: import --replace puts the archive's in its place", err)}
	case errors.As(err, &locked):
		return got, &RefusedError{Err: err, Message: fmt.Sprintf("session %s cannot be replaced now: %v", got.Manifest.Session, err)}
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return got, fmt.Errorf("import interrupted: nothing was imported: %w", err)
	case err != nil:
		return got, storeRefused(st, err)
	}
	return got, nil
}

// checkFullID accepts a whole session id, as NewSessionID makes them: an
// archive names its session, never the start of one.
func checkFullID(id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	if len(id) != len(idShape) {
		return fmt.Errorf("%q is not a whole session id (they look like %s)", id, IDExample)
	}
	return nil
}
