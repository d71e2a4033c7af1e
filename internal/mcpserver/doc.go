// Package mcpserver is pipeline's Model Context Protocol server, the
// driver behind pipeline mcp: an agent in Claude Code, Gemini CLI or Codex
// validates, plans, runs, pauses, resumes and reads the pipelines of one
// folder through its tools, reads each session as a resource (and is told
// when a session it subscribed to changes state), and gets two prompts
// built from a session's real status.
//
// # How it reaches the product
//
// A tool runs this same binary (Options.Binary, os.Executable() for
// pipeline mcp) with -o json and decodes what it prints, rather than
// calling the engine in process. The commands' flags, messages, JSON
// shapes, redaction, locks and exit codes live in cmd/pipeline (package
// main, which nothing can import); running them is the one way to make
// the tools answer exactly what the CLI answers, to keep every exit code
// (0 completed, 1 failed, 2 usage, 3 paused) in the structured output,
// and to keep a command that misbehaves from taking the server down. A
// command costs one process start (a few milliseconds: pipeline keeps its
// start-up light). run and resume start the runner as a detached process
// (a session and process group of its own, its output in a log file under
// the store), so that the run outlives the request and the server.
//
// What has no command of its own is read in process through the same
// read-only paths the CLI uses: the bounded tail of the transcripts
// (session.Find and the store's files, no link followed), the list of
// sessions behind resources/list (the stores' indexes), and the change
// notifications, which follow each subscribed store's index.tsv with
// fsnotify.
//
// # Confinement
//
// The server exposes the pipelines under one folder, its root: a file
// argument is taken relative to it, and one that leaves it (by .., an
// absolute path elsewhere, or a symbolic link) is refused; a session is
// looked up in the stores below the root only, and one whose phases.yaml
// or store lies outside it is refused.
package mcpserver
