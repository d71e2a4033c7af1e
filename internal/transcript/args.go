package transcript

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// argKeys are the arguments that say what a tool call is about, in the
// order they are looked for: the file an edit touches, the command a
// shell runs, the pattern a search looks for.
var argKeys = []string{"file_path", "absolute_path", "notebook_path", "pattern", "path", "dir_path", "command", "cmd",
	"query", "url", "description", "prompt", "skill", "name"}

// pathKey tells the arguments that hold a path, shown relative to the
// step's folder.
func pathKey(key string) bool {
	switch key {
	case "file_path", "absolute_path", "notebook_path", "path", "dir_path":
		return true
	}
	return false
}

// maxArgs is how many characters of a call's arguments show.
const maxArgs = 100

// ShortArgs says in a few words what a call of tool with input does: the
// file it touches, the command it runs, the pattern it looks for (a
// search's folder beside it); else its input as compact JSON. Paths under
// dir show relative to it.
func ShortArgs(tool string, input map[string]any, dir string) string {
	if len(input) == 0 {
		return ""
	}
	for _, key := range argKeys {
		s, ok := input[key].(string)
		if !ok || strings.TrimSpace(s) == "" {
			continue
		}
		if pathKey(key) {
			s = relative(s, dir)
		}
		if key == "pattern" {
			if where, ok := input["path"].(string); ok && where != "" {
				s += " in " + relative(where, dir)
			}
		}
		return shorten(s)
	}
	b, err := json.Marshal(input)
	if err != nil {
		return ""
	}
	return shorten(string(b))
}

// relative shows path relative to dir when it is below it.
func relative(path, dir string) string {
	if dir == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return path
	}
	return rel
}

// shorten keeps the first line of s, at most maxArgs characters.
func shorten(s string) string {
	s = strings.TrimSpace(s)
	first, _, more := strings.Cut(s, "\n")
	first = strings.TrimSpace(first)
	if utf8.RuneCountInString(first) > maxArgs {
		runes := []rune(first)
		return string(runes[:maxArgs-1]) + "…"
	}
	if more {
		return first + " …"
	}
	return first
}
