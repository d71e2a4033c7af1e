package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The engine is pure: it imports the spec model and triggers, and from the
// standard library nothing that starts a process, touches a file or a
// terminal, or reads the clock or randomness, so that a replay (and a
// Temporal workflow) decides the same way every time. This test reads the
// package's own source, so it needs nothing but Go.
func TestEngineIsPure(t *testing.T) {
	allowed := map[string]bool{
		"github.com/pipeline-dev/pipeline/engine/spec": true,
		"github.com/pipeline-dev/pipeline/triggers":    true,
	}
	forbidden := []string{"os", "os/exec", "os/signal", "syscall", "io/fs", "io/ioutil", "path/filepath", "net",
		"net/http", "math/rand", "math/rand/v2", "crypto/rand", "runtime", "unsafe", "plugin", "log",
		"golang.org/x/sys/unix", "golang.org/x/term"}
	// Calls that read the wall clock or wait on it.
	clockCalls := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s: the engine must stay pure", fset.Position(imp.Pos()), path)
				}
			}
			if strings.Contains(strings.SplitN(path, "/", 2)[0], ".") && !allowed[path] &&
				strings.HasPrefix(path, "github.com/pipeline-dev/pipeline/") {
				t.Errorf("%s imports %s: the engine imports only the spec model and triggers", fset.Position(imp.Pos()), path)
			}
		}
		full, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(full, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" && clockCalls[sel.Sel.Name] {
				t.Errorf("%s calls time.%s: the engine takes its time from events", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 4 {
		t.Fatalf("only %d files checked: is the test in the engine's folder?", checked)
	}
}
