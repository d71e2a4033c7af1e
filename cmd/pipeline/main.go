// Command pipeline runs long AI-agent work as declared phases. This package
// only parses flags, calls the engine and prints; see README.md.
package main

import (
	"errors"
	"fmt"
	"github.com/pipeline-dev/pipeline/internal/render"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/pipeline-dev/pipeline/app"
	"github.com/pipeline-dev/pipeline/engine/local"
	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/internal/profile"
	"github.com/pipeline-dev/pipeline/internal/stackgrow"
	"github.com/pipeline-dev/pipeline/internal/termsafe"
	"github.com/pipeline-dev/pipeline/telemetry"
)

// Exit codes are documented in README.md and stable.
const (
	exitCompleted = app.ExitCompleted
	exitFailed    = app.ExitFailed
	exitUsage     = app.ExitUsage
	exitPaused    = app.ExitPaused
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if code, done := serveWeb(args); done {
		return code
	}
	if done, err := handOffCompanion(args); done {
		return failed(nil, args, err)
	}
	if runsAndEndsHere(args) {
		local.CatchSignalsAhead()
	}
	if path := os.Getenv("PIPELINE_CPUPROFILE"); path != "" {
		defer profile.StartCPU(path, os.Stderr)()
	}
	// pipeline --version has no session to observe nor a web request to
	// make: it pays for neither (see printVersion).
	if len(args) == 1 && args[0] == "--version" {
		return printVersion()
	}
	// A run's main goroutine reaches 32 KiB of stack: grown at once here,
	// rather than by copies at 8, 16 and 32 KiB deep in cobra, the plan and
	// the session (3 % of the CPU of pipeline run of one true step, perf:
	// runtime.newstack). pipeline --version, which stays shallow, does
	// without: the frame's zeroing costs it 5 page faults.
	stackgrow.To32K()
	useWeb()
	// Off (and costing nothing) unless a session's plan or OTEL_* set an
	// endpoint; then exported as the command ends, within 2 s (4 s when a
	// periodic export is on its way then).
	defer telemetry.Install(version, os.Stderr).Finish()
	root := rootFor(args)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	// A command that ended without the run the signals were caught for
	// gives them back: one that came does now what it would have done.
	local.LetSignalsAheadGo()
	if err == nil {
		return exitCompleted
	}
	return failed(cmd, args, err)
}

// failed reports the error a command line ended with (as JSON too when
// it asked for -o json) and is its exit code. cmd is the command that
// ran, nil when none did.
func failed(cmd *cobra.Command, args []string, err error) int {
	if wantsJSON(cmd, args) && !alreadyPrinted(err) {
		// The text on standard error stays, for a person reading the log.
		render.JSON(os.Stdout, errorJSON(err))
	}
	var specErr *spec.Error
	switch {
	case alreadyPrinted(err):
	case errors.As(err, &specErr):
		// It names its own files and lines.
		printError(os.Stderr, specErr.Error())
	default:
		printError(os.Stderr, "pipeline: "+trimNewline(err.Error())+"\n")
	}
	if hint := app.Hint(err); hint != "" && !alreadyPrinted(err) {
		printError(os.Stderr, "hint: "+hint+"\n")
	}
	return exitCode(err)
}

// wantsJSON tells whether the command was asked for --output json: as
// parsed, or as written when the error came before the flag was parsed.
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("output"); f != nil && f.Changed {
			return f.Value.String() == "json"
		}
	}
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "-ojson" || a == "--output=json" || a == "-o=json":
			return true
		case (a == "-o" || a == "--output") && i+1 < len(args) && args[i+1] == "json":
			return true
		}
	}
	return false
}

// errorJSON is err as a program reads it (app.Report).
func errorJSON(err error) app.ErrorReport {
	r := app.Report(err)
	r.Code = exitCode(err)
	return r
}

// printError writes an error message made safe: it may quote a file or a
// step, so secrets are redacted and escape sequences removed (see
// package termsafe); its line breaks stay.
func printError(w io.Writer, text string) {
	r := app.Redactor()
	text = r.String(text)
	if safe := termsafe.Text(text); safe != text {
		text = r.String(safe)
	}
	io.WriteString(w, text)
}

// exitCode maps an error to the documented exit codes: a command's own
// error as the product API maps it, one raised by cobra while parsing the
// command line (an unknown command or flag, a wrong number of arguments)
// as a usage error.
func exitCode(err error) int {
	var (
		cmdErr    *commandError
		exitError *exitStatus
		coded     interface{ ExitCode() int }
	)
	switch {
	case err == nil:
		return exitCompleted
	case errors.As(err, &exitError):
		return exitError.code
	case errors.As(err, &cmdErr), errors.As(err, &coded):
		return app.ExitCode(err)
	default:
		return exitUsage
	}
}

func trimNewline(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	return s
}

func usagef(format string, args ...any) error { return app.Usagef(format, args...) }

// commandError marks an error returned by a command's own code, as opposed
// to one cobra raised while parsing the command line.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// exitStatus ends a command with a given code after it printed its own
// report (validate with problems, for example).
type exitStatus struct {
	code    int
	printed bool
}

func (e *exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func alreadyPrinted(err error) bool {
	var es *exitStatus
	return errors.As(err, &es) && es.printed
}

// newRoot is pipeline without its commands.
func newRoot() *cobra.Command {
	root := newBareRoot()
	// pipeline --version: the line of pipeline version.
	root.Version = "set"
	root.SetVersionTemplate(buildVersion().String() + "\n")
	return root
}

// newBareRoot is pipeline without its --version, which only a command
// line run by the root itself can give.
func newBareRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "pipeline",
		Short: "Run long AI-agent work as declared phases",
		Long: `pipeline runs the phases of a phases.yaml: each phase's steps (an agent
CLI such as Claude Code, Gemini CLI or Codex CLI, any command, or a shell
step such as the tests), with pause triggers and retry/restart policies
written as expressions.

Exit codes: 0 completed, 1 failed, 2 usage, spec or environment error (a
file or folder that cannot be read or written), 3 paused.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%s", err) })
	return root
}

// rootCommand is pipeline with every command.
func rootCommand() *cobra.Command {
	root := newRoot()
	for _, c := range commands {
		root.AddCommand(c.build())
	}
	for _, extra := range extraCommands {
		root.AddCommand(extra())
	}
	addCompletions(root)
	return root
}

// commands are pipeline's commands, by name, in the order help lists
// them.
var commands = []struct {
	name  string
	build func() *cobra.Command
}{
	{"run", runCommand}, {"resume", resumeCommand}, {"pause", pauseCommand}, {"status", statusCommand},
	{"sessions", sessionsCommand}, {"logs", logsCommand}, {"mcp", mcpCommand}, {"complete", completeCommand},
	{"clean", cleanCommand}, {"watch", watchCommand}, {"validate", validateCommand}, {"plan", planCommand},
	{"schema", schemaCommand}, {"init", initCommand}, {"templates", templatesCommand}, {"version", versionCommand}, {"export", exportCommand},
	{"import", importCommand}, {"doctor", doctorCommand}, {"rewind", rewindCommand}, {"fork", forkCommand},
	{"replay", replayCommand}, {"diff", diffCommand}, {"memory", memoryCommand}, {"search", searchCommand},
	{"worker", workerCommand}, {"attach", attachCommand},
	{"ui", uiCommand},
}

// rootFor is the command tree a command line needs: pipeline --version
// needs no command, and a command line that begins with a command's name
// needs that command alone. Building the 25 commands and their flags
// costs a third of a millisecond at every start (and touches memory a
// short run pays for in page faults); help, completion, a mistyped
// command and the rest get the whole tree.
func rootFor(args []string) *cobra.Command {
	if len(args) == 1 && args[0] == "--version" {
		return newRoot()
	}
	if len(args) > 0 {
		for _, c := range commands {
			if c.name == args[0] {
				return rootWithCommand(c.build())
			}
		}
	}
	return rootCommand()
}

// rootWithCommand is pipeline with the one command a command line
// begins with. The root never runs itself then, so it goes without what
// only it would use: its --version (the build's version, read from its
// build information) and cobra's completion command, whose four shells'
// help cobra formats at every start (0.5 % of the CPU of pipeline run of
// one true step, perf). "pipeline completion" gets the whole tree.
func rootWithCommand(cmd *cobra.Command) *cobra.Command {
	root := newBareRoot()
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(cmd)
	addCompletions(root)
	return root
}

// extraCommands are commands of builds with a tag (man.go).
var extraCommands []func() *cobra.Command

// newCommand builds a command whose run function's errors are marked as the
// command's own.
func newCommand(cmd *cobra.Command, runFunc func(cmd *cobra.Command, args []string) error) *cobra.Command {
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if err := runFunc(c, args); err != nil {
			return &commandError{err}
		}
		return nil
	}
	return cmd
}
