// Package render writes the product's responses (package app) as the
// text a person reads: status (and -v), plan, sessions, memory, diff,
// doctor's checks and watch's lines. The CLI prints them; the MCP server
// and the dashboard can show the same words. The output is the product:
// cmd/pipeline's golden files check it byte for byte.
//
// Every value that came from outside (names, reasons, notes, commands)
// is made safe for a terminal on the way (package termview).
package render
