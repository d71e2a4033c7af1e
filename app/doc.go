// Package app is the product's API: one function per operation of
// pipeline (validate, plan, status, sessions, logs, memory, search, pause
// ...), each entered with a context and a typed request and returning the
// typed response that `-o json` prints, or an error that carries its exit
// code (see ExitCode). Every surface calls it in process: the command
// line renders its responses as text or JSON, the MCP server returns
// them to agents, the web UI serves them. A response leaves this package
// redacted, whichever surface asked.
package app
