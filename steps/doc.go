// Package steps runs the steps of a phase: agent adapters (claude, gemini,
// codex, command), shell steps, process-group control, and parsing of output
// into events.
package steps
