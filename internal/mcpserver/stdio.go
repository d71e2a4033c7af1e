package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxFrame is the longest line (one JSON-RPC message) the stdio
// transport reads; a longer one is answered with an error and skipped,
// without being held in memory.
const MaxFrame = 8 << 20

// The JSON-RPC error codes of a frame that is not a message.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// StdioTransport is the MCP transport over in and out, one JSON-RPC
// message a line, that survives what a client (or anyone who can write
// to its standard input) sends: a line that is not JSON, not a JSON-RPC
// 2.0 message, a batch, or longer than MaxFrame is answered with a
// JSON-RPC error (id null) and skipped, and the server keeps serving. The
// SDK's own stdio transport ends the session on the first such line.
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	return &mcp.IOTransport{
		Reader: &frameFilter{in: bufio.NewReaderSize(in, 64<<10), out: w},
		Writer: w,
		// Every line that reaches the SDK has been measured here.
		MaxLineLength: MaxFrame + 2,
	}
}

// lockedWriter writes each message whole: the SDK's answers and the
// filter's errors never interleave within a line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// frameFilter passes on the lines that are JSON-RPC messages the SDK can
// decode, and answers every other line itself.
type frameFilter struct {
	in      *bufio.Reader
	out     io.Writer
	pending []byte
	eof     bool
}

func (f *frameFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.eof {
			return 0, io.EOF
		}
		line, tooLong, err := f.line()
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		f.eof = err != nil
		switch {
		case tooLong:
			f.refuse(codeInvalidRequest, fmt.Sprintf("a message of more than %d bytes: refused unread", MaxFrame))
		case len(bytes.TrimSpace(line)) > 0:
			if code, why := check(line); code != 0 {
				f.refuse(code, why)
			} else {
				f.pending = append(line, '\n')
			}
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

func (f *frameFilter) Close() error { return nil }

// line reads the next line, without its newline; one longer than
// MaxFrame is read to its end and dropped (tooLong).
func (f *frameFilter) line() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := f.in.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxFrame+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// check says why line is not one JSON-RPC 2.0 message the SDK can take:
// the error code and the message, or 0.
func check(line []byte) (int, string) {
	if !json.Valid(line) {
		return codeParseError, "parse error: the line is not one JSON value (one JSON-RPC message a line, UTF-8, no NUL bytes)"
	}
	if line = bytes.TrimSpace(line); line[0] != '{' {
		return codeInvalidRequest, "invalid request: a message is a JSON object (batches are not supported: one message a line)"
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return codeInvalidRequest, fmt.Sprintf(`invalid request: %v (a message has "jsonrpc": "2.0", a string or number id, and a method, a result or an error)`, err)
	}
	return 0, ""
}

// refuse answers a line that is not a message with a JSON-RPC error, id
// null: the id of what cannot be read is not known.
func (f *frameFilter) refuse(code int, message string) {
	b, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	_, _ = f.out.Write(append(b, '\n'))
}
