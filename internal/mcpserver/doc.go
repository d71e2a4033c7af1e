// Package mcpserver is pipeline's Model Context Protocol server, the
// driver behind pipeline mcp: an agent in Claude Code, Gemini CLI or Codex
// validates, plans, runs, pauses, resumes and reads the pipelines of one
// folder through its tools, reads each session as a resource (and is told
// when a session it subscribed to changes state), and gets two prompts
// built from a session's real status.
//
// # How it reaches the product
//
// Every tool calls the product API (package app) in process: the same
// functions, typed requests and responses (the JSON that -o json prints),
// redaction and typed errors as the command line, so a tool answers what
// the command answers and an error carries the same exit code and hint.
// Arguments are values, never a command line: nothing a client sends
// becomes a flag. The one process the server starts is the runner of run
// and resume (Options.Binary, os.Executable() for pipeline mcp): a
// detached process (a session and process group of its own, its output in
// a log file under the store), so that the run outlives the request and
// the server.
//
// The change notifications follow each subscribed store's index.tsv with
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
