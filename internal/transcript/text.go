package transcript

import (
	"fmt"
	"io"
	"strings"
)

// Options choose what the text of a transcript shows.
type Options struct {
	// Verbose shows the model's thinking.
	Verbose bool
	// ResultLines is how many lines of a tool's result show (3 when 0;
	// below 0, all).
	ResultLines int
}

// WriteText writes items as a person reads them: the assistant's text as
// it said it, "▸ Tool args" for a call, the first lines of its result
// indented under it, a turn's tokens and cost on a line of their own.
func WriteText(w io.Writer, items []Item, o Options) error {
	for _, it := range items {
		if text := Line(it, o); text != "" {
			if _, err := io.WriteString(w, text); err != nil {
				return err
			}
		}
	}
	return nil
}

// Line is the text of one item, ending with a line ending; "" for an item
// the options hide.
func Line(it Item, o Options) string {
	switch it.Kind {
	case Text, Output:
		return withNewline(it.Text)
	case Thinking:
		if !o.Verbose {
			return ""
		}
		return indent(it.Text, "  ∴ ", "  ∴ ")
	case ToolCall:
		if it.Args == "" {
			return "▸ " + it.Tool + "\n"
		}
		return "▸ " + it.Tool + " " + it.Args + "\n"
	case ToolResult:
		return resultText(it, o)
	case Usage:
		return usageText(it) + "\n"
	case Error:
		return indent(it.Text, "! ", "  ")
	}
	return ""
}

func resultText(it Item, o Options) string {
	text := strings.TrimRight(it.Text, "\n")
	if text == "" {
		if it.Failed {
			return "  ✗ failed\n"
		}
		return ""
	}
	lines := strings.Split(text, "\n")
	limit := o.ResultLines
	if limit == 0 {
		limit = 3
	}
	var more int
	if limit > 0 && len(lines) > limit {
		lines, more = lines[:limit], len(lines)-limit
	}
	mark := "  │ "
	if it.Failed {
		mark = "  ✗ "
	}
	out := indent(strings.Join(lines, "\n"), mark, "  │ ")
	if more > 0 {
		out += fmt.Sprintf("  │ … %d more line%s\n", more, plural(more))
	}
	return out
}

// usageText is a turn's tokens and cost: "· 1,230 tokens in, 30 out, $0.0004".
func usageText(it Item) string {
	s := fmt.Sprintf("· %s tokens in, %s out", thousands(it.InputTokens), thousands(it.OutputTokens))
	if it.CostUSD > 0 {
		s += fmt.Sprintf(", $%.4f", it.CostUSD)
	}
	return s
}

// Words is what search indexes of an item: what was said, the tool and
// its arguments, what the tool answered; "" for usage and for thinking.
func Words(it Item) string {
	switch it.Kind {
	case Text, Output, Error, ToolResult:
		return it.Text
	case ToolCall:
		return strings.TrimSpace(it.Tool + " " + it.Args)
	}
	return ""
}

func indent(text, first, rest string) string {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i == 0 {
			b.WriteString(first)
		} else {
			b.WriteString(rest)
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

func withNewline(s string) string {
	if s == "" || strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
