package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/pipeline-dev/pipeline/engine/session"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/engine/store"
	"github.com/pipeline-dev/pipeline/internal/filewatch"
)

// Exit codes are documented in README.md and stable.
const (
	ExitCompleted = 0
	ExitFailed    = 1
	ExitUsage     = 2
	ExitPaused    = 3
)

// Error is an operation's refusal or failure with the exit code the
// command line ends with: a mistake in how it was asked (ExitUsage), or
// an outcome (ExitFailed, ExitPaused).
type Error struct {
	Code    int
	Message string
	// Hint says what to do, when the message does not.
	Hint string
}

func (e *Error) Error() string { return e.Message }

// ExitCode is the documented exit code of the error.
func (e *Error) ExitCode() int { return e.Code }

// Usagef is a mistake in how an operation was asked: exit code 2.
func Usagef(format string, args ...any) error {
	return &Error{Code: ExitUsage, Message: fmt.Sprintf(format, args...)}
}

// ExitCode maps an error to the documented exit codes, in this one place:
// an error that knows its code says it; a spec error, a refusal, a
// missing file and an environment error are 2; any other error of an
// operation is 1.
func ExitCode(err error) int {
	var (
		coded   interface{ ExitCode() int }
		specErr *spec.Error
		refused *session.RefusedError
	)
	switch {
	case err == nil:
		return ExitCompleted
	case errors.As(err, &coded):
		return coded.ExitCode()
	case errors.As(err, &specErr), errors.As(err, &refused), errors.Is(err, fs.ErrNotExist), EnvironmentError(err):
		return ExitUsage
	default:
		return ExitFailed
	}
}

// ErrorReport is an error as a program reads it (`-o json`, an MCP tool's
// error): the message, the exit code, and for a spec error where it is
// and every problem found. Redacted.
type ErrorReport struct {
	Error    string         `json:"error"`
	Code     int            `json:"code"`
	Position *spec.Position `json:"position,omitempty"`
	Problems []spec.Problem `json:"problems,omitempty"`
	Hint     string         `json:"hint,omitempty"`
}

// Report is err as a program reads it.
func Report(err error) ErrorReport {
	r := environmentRedactor()
	out := ErrorReport{Error: r.String(strings.TrimRight(err.Error(), "\n")), Code: ExitCode(err), Hint: r.String(Hint(err))}
	var specErr *spec.Error
	if errors.As(err, &specErr) && len(specErr.Problems) > 0 {
		first := specErr.Problems[0]
		out.Error = r.String(first.Message)
		if first.File != "" {
			pos := first.Position
			out.Position = &pos
		}
		for _, p := range specErr.Problems {
			p.Message, p.Source, p.Hint = r.String(p.Message), r.String(p.Source), r.String(p.Hint)
			out.Problems = append(out.Problems, p)
		}
	}
	return out
}

// Hint says what to do about err, or "": an Error's own hint, or the way
// out of an environment error.
func Hint(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Hint != "" {
		return e.Hint
	}
	return environmentHint(err)
}

// EnvironmentError tells whether err comes from the machine rather than
// from the pipeline or its steps: a file or folder that cannot be read or
// written, a file where a folder should be or the other way round, a
// read-only or full disk, a limit of the system's file watching. It is
// matched by its errno, however the error was wrapped.
func EnvironmentError(err error) bool {
	var watchLimit *filewatch.WatchLimitError
	return errors.As(err, &watchLimit) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) ||
		errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) ||
		errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// environmentHint says what to do about an environment error, or "". A
// message that already names --state-dir needs no second hint.
func environmentHint(err error) string {
	var watchLimit *filewatch.WatchLimitError
	if err == nil || !EnvironmentError(err) || strings.Contains(err.Error(), "--state-dir") || errors.As(err, &watchLimit) {
		return "" // a watch limit's message says what to raise
	}
	what := "a file or folder pipeline needs"
	var (
		pathErr *fs.PathError
		linkErr *os.LinkError
	)
	switch {
	case errors.As(err, &pathErr):
		what = pathErr.Path
	case errors.As(err, &linkErr):
		what = linkErr.New
	}
	var problem string
	switch {
	case errors.Is(err, syscall.EROFS):
		problem = "is on a read-only file system"
	case errors.Is(err, syscall.ENOTDIR):
		problem = "has a file where a folder should be"
	case errors.Is(err, syscall.EISDIR):
		problem = "is a folder where a file should be"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		problem = "is on a full disk"
	default:
		problem = "cannot be read or written with your permissions"
	}
	return fmt.Sprintf("%s %s; fix that, or keep the sessions elsewhere with --state-dir DIR (or PIPELINE_STATE_DIR=DIR)", what, problem)
}

// StoreUnusable is a store the environment keeps from being used: the
// user's to fix, exit 2.
func StoreUnusable(err error) error {
	if EnvironmentError(err) {
		return err // exit 2, with its hint
	}
	return Usagef("%v\n(pass --state-dir DIR, or set PIPELINE_STATE_DIR, to keep sessions elsewhere)", err)
}

// StoreWriteFailed turns an error writing the store (a full disk, an I/O
// error, a folder made read-only) into a usage error, exit 2: the
// environment failed, not the session.
func StoreWriteFailed(err error) error {
	var (
		errno   syscall.Errno
		refused *session.RefusedError
		coded   *Error
	)
	if err == nil || errors.As(err, &refused) || errors.As(err, &coded) {
		return err
	}
	if errors.As(err, &errno) || errors.Is(err, store.ErrRemoved) || errors.Is(err, store.ErrSymlink) {
		return StoreUnusable(err)
	}
	return err
}
