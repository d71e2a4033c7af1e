package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The engine decides, and a Temporal workflow runs it: both must decide
// the same way every time, on any worker and at every replay. So the code
// they run reads no file, clock, environment or randomness, makes no
// system call and starts no goroutine, and what they link starts no
// process and reaches no network. These tests list what that code links
// with `go list -deps`, and read the source of every package of this
// module among it.

const module = "github.com/pipeline-dev/pipeline"

// forbiddenPackages may not be linked by the engine nor by the packages
// the workflow's code uses, with why. A package of the standard library
// is forbidden alone (net/url is not net), one of a module with all below
// it.
var forbiddenPackages = map[string]string{
	"os/exec":                            "starts processes",
	"os/signal":                          "takes the process's signals",
	"net":                                "reaches the network",
	"net/http":                           "reaches the network",
	"math/rand":                          "draws random numbers",
	"math/rand/v2":                       "draws random numbers",
	"crypto/rand":                        "draws random numbers",
	"database/sql":                       "opens databases",
	"plugin":                             "loads code",
	"golang.org/x/sys/unix":              "makes system calls",
	"golang.org/x/sys/windows":           "makes system calls",
	"github.com/fsnotify/fsnotify":       "watches files",
	"modernc.org/sqlite":                 "opens databases",
	module + "/engine/store":             "is the session store",
	module + "/engine/session":           "opens and records sessions",
	module + "/engine/local":             "runs steps",
	module + "/steps":                    "runs agents and commands",
	module + "/internal/filewatch":       "watches files",
	module + "/internal/clock":           "reads the wall clock",
	"go.temporal.io/sdk/client":          "dials the Temporal server",
	"go.temporal.io/sdk/activity":        "is activity code",
	"go.temporal.io/sdk/worker":          "runs workers",
	"go.temporal.io/api/workflowservice": "calls the Temporal server",
}

// forbiddenCalls are what of the standard library pure code may not use:
// the named functions and variables (Type.Method for a method), or all of
// a package, its types' methods too, when none are named.
var forbiddenCalls = map[string][]string{
	// The wall clock, waiting on it, and the machine's time zone.
	"time": {"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick", "LoadLocation",
		"Local", "Time.Local"},
	// Files, the environment, the working directory, the process.
	"os":        nil,
	"syscall":   nil,
	"io/ioutil": nil,
	"runtime":   nil,
	"os/exec":   nil,
	"os/signal": nil,
	"net":       nil,
	// What of filepath reads the file system or the working directory;
	// the rest of it is arithmetic on strings.
	"path/filepath": {"Abs", "EvalSymlinks", "Glob", "Walk", "WalkDir"},
	"math/rand":     nil,
	"math/rand/v2":  nil,
	"crypto/rand":   nil,
}

// workflowSDK are the packages of the Temporal SDK the workflow's code may
// use: its deterministic runtime (workflow: timers, signals, the replayed
// clock), its error and retry types (temporal) and the API's enums. What
// they link (the gRPC client a worker dials with) is the worker's, which
// workflow code does not call, so it is not listed.
var workflowSDK = map[string]bool{
	"go.temporal.io/sdk/workflow": true,
	"go.temporal.io/sdk/temporal": true,
	"go.temporal.io/api/enums/v1": true,
}

// engineAllowed and workflowAllowed are the forbidden uses found in the
// code the engine or the workflow runs that are justified, each with why,
// by "function: use" as the tests print them. An entry that no longer
// matches fails, so that none outlives its reason.
var (
	engineAllowed   = map[string]string{}
	workflowAllowed = map[string]string{}
)

// The engine, and every function of this module it can reach.
func TestEngineIsPure(t *testing.T) {
	const engine = module + "/engine"
	list := goList(t, "", engine)
	checkLinks(t, "the engine", list.linkedBy(engine))
	src := newSource(list)
	src.add(t, engine)
	roots := src.functionsOf(engine)
	for _, dep := range list[engine].Deps {
		if inModule(dep) {
			src.add(t, dep)
		}
	}
	for _, pkg := range []string{engine + "/spec", module + "/triggers"} {
		if !src.scanned[pkg] {
			t.Errorf("%s was not scanned: does the engine still use it?", pkg)
		}
	}
	src.check(t, src.reach(append(roots, src.alwaysRun(engine)...)), engineAllowed)
}

// The workflow's code (in engine/temporal, the functions that take a
// workflow.Context and all they call), what it links, and every function
// of this module it can reach. The activities and the client share the
// package and do I/O by design; the workflow must not call them.
func TestWorkflowIsPure(t *testing.T) {
	const temporal = module + "/engine/temporal"
	list := goList(t, "temporal", temporal)
	src := newSource(list)
	src.add(t, temporal)
	roots := src.workflowFunctions(temporal)
	if len(roots) == 0 {
		t.Fatalf("no function of %s takes a workflow.Context: where did the workflow go?", temporal)
	}
	var uses []string
	for path, by := range src.importsOf(src.reach(roots), temporal) {
		switch {
		case strings.HasPrefix(path, "go.temporal.io/") && !workflowSDK[path]:
			t.Errorf("the workflow's code (%s) uses %s: of the SDK, only the workflow runtime is deterministic", by, path)
		case !strings.HasPrefix(path, "go.temporal.io/"):
			uses = append(uses, path)
		}
	}
	slices.Sort(uses)
	checkLinks(t, "the workflow's code", list.linkedBy(uses...))
	for _, dep := range list.linkedBy(uses...) {
		if inModule(dep) {
			src.add(t, dep)
		}
	}
	if !src.scanned[module+"/engine"] || !src.scanned[module+"/engine/spec"] {
		t.Errorf("the workflow's code uses %v: not the engine and the spec?", uses)
	}
	src.check(t, src.reach(append(roots, src.alwaysRun(temporal)...)), workflowAllowed)
}

// goPackage is a package as go list describes it.
type goPackage struct {
	ImportPath string
	Dir        string
	Export     string // the compiler's export data, which the type checker imports
	GoFiles    []string
	CgoFiles   []string
	Deps       []string
}

// packageList is a package and all it links, by import path.
type packageList map[string]*goPackage

// goList runs go list -deps on pattern, with the build tags.
func goList(t *testing.T, tags, pattern string) packageList {
	t.Helper()
	args := []string{"list", "-deps", "-export", "-json=ImportPath,Dir,Export,GoFiles,CgoFiles,Deps", "-tags=" + tags, pattern}
	cmd := exec.Command(goBinary(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	list := packageList{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's answer: %v", err)
		}
		list[p.ImportPath] = &p
	}
	if list[pattern] == nil {
		t.Fatalf("go list -deps %s did not list it", pattern)
	}
	return list
}

// linkedBy is the packages and all they link.
func (l packageList) linkedBy(paths ...string) []string {
	var all []string
	for _, path := range paths {
		all = append(all, path)
		if p := l[path]; p != nil {
			all = append(all, p.Deps...)
		}
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// goBinary is the go command of the toolchain that built the test, or
// else the one on PATH.
func goBinary(t *testing.T) string {
	t.Helper()
	own := filepath.Join(build.Default.GOROOT, "bin", "go")
	if _, err := os.Stat(own); err == nil {
		return own
	}
	path, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command in %s nor on PATH: the purity tests list packages with it", own)
	}
	return path
}

func inModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// checkLinks fails for each forbidden package among linked.
func checkLinks(t *testing.T, what string, linked []string) {
	t.Helper()
	for _, path := range linked {
		for bad, why := range forbiddenPackages {
			tree := strings.Contains(strings.Split(bad, "/")[0], ".")
			if path == bad || tree && strings.HasPrefix(path, bad+"/") {
				t.Errorf("%s links %s, which %s", what, path, why)
			}
		}
	}
}

// function is a function or method of the scanned source, or a
// package's initialisation (its variables and init functions): what it
// calls or names, and what it does that pure code may not.
type function struct {
	pkg     string
	method  bool
	refs    []string        // the functions it names, by key
	uses    []use           // what pure code may not do
	imports map[string]bool // the packages it names, and those of this module it calls into
}

type use struct {
	at   token.Position
	what string
}

// source is the type-checked code of some packages of this module: the
// graph of what names what, to the function. A call through an
// interface may be any method of that name.
type source struct {
	list     packageList
	fset     *token.FileSet
	importer types.Importer
	funcs    map[string]*function
	methods  map[string][]string // by name: the keys of the methods
	files    map[string][]*ast.File
	info     map[string]*types.Info
	scanned  map[string]bool
}

func newSource(list packageList) *source {
	s := &source{list: list, fset: token.NewFileSet(), funcs: map[string]*function{}, methods: map[string][]string{},
		files: map[string][]*ast.File{}, info: map[string]*types.Info{}, scanned: map[string]bool{}}
	s.importer = importer.ForCompiler(s.fset, "gc", func(path string) (io.ReadCloser, error) {
		p := list[path]
		if p == nil || p.Export == "" {
			return nil, errors.New("go list gave no export data for " + path)
		}
		return os.Open(p.Export)
	})
	return s
}

// add parses and type-checks a package and records its functions.
func (s *source) add(t *testing.T, path string) {
	t.Helper()
	if s.scanned[path] {
		return
	}
	s.scanned[path] = true
	p := s.list[path]
	var files []*ast.File
	for _, name := range append(slices.Clone(p.GoFiles), p.CgoFiles...) {
		f, err := parser.ParseFile(s.fset, filepath.Join(p.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	if _, err := (&types.Config{Importer: s.importer}).Check(path, s.fset, files, info); err != nil {
		t.Fatalf("type-checking %s: %v", path, err)
	}
	s.files[path], s.info[path] = files, info
	for _, f := range files {
		for _, decl := range f.Decls {
			key, node := declKey(path, decl, info)
			if node == nil {
				continue
			}
			fn := s.funcs[key]
			if fn == nil {
				fn = &function{pkg: path, imports: map[string]bool{}}
				s.funcs[key] = fn
			}
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Recv != nil {
				fn.method = true
				s.methods[fd.Name.Name] = append(s.methods[fd.Name.Name], key)
			}
			s.visit(fn, node, info)
		}
	}
}

// declKey names a declaration's function as types.Func.FullName does, or
// pkg.init for the package's variables and init functions; node is what
// to read of it, nil for a declaration that runs nothing.
func declKey(pkg string, decl ast.Decl, info *types.Info) (string, ast.Node) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Body == nil {
			return "", nil
		}
		if d.Recv == nil && d.Name.Name == "init" {
			return pkg + ".init", d.Body
		}
		return info.Defs[d.Name].(*types.Func).FullName(), d
	case *ast.GenDecl:
		if d.Tok == token.VAR {
			return pkg + ".init", d
		}
	}
	return "", nil
}

// visit records what node names and does into fn.
func (s *source) visit(fn *function, node ast.Node, info *types.Info) {
	at := func(n ast.Node, what string) { fn.uses = append(fn.uses, use{s.fset.Position(n.Pos()), what}) }
	ast.Inspect(node, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			at(n, "a go statement")
		case *ast.SelectStmt:
			at(n, "a select statement")
		case *ast.SendStmt:
			at(n, "a channel send")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				at(n, "a channel receive")
			}
		case *ast.Ident:
			obj := info.Uses[n]
			if pkg, ok := obj.(*types.PkgName); ok {
				fn.imports[pkg.Imported().Path()] = true
			}
			if obj == nil || obj.Pkg() == nil {
				return true
			}
			name, isFunc := qualifiedName(obj)
			if name == "" {
				return true
			}
			if forbidden(obj.Pkg().Path(), name) {
				at(n, obj.Pkg().Path()+"."+name)
			}
			if isFunc {
				fn.refs = append(fn.refs, funcKey(obj.(*types.Func)))
				if inModule(obj.Pkg().Path()) {
					fn.imports[obj.Pkg().Path()] = true // a method's package need not be named
				}
			}
		}
		return true
	})
}

// qualifiedName is how forbiddenCalls names a function, variable or
// method of its package (Type.Method), "" for anything else (a type, a
// constant, a field, a local).
func qualifiedName(obj types.Object) (name string, isFunc bool) {
	switch obj := obj.(type) {
	case *types.Func:
		recv := obj.Signature().Recv()
		if recv == nil {
			return obj.Name(), true
		}
		t := recv.Type()
		if ptr, ok := t.(*types.Pointer); ok {
			t = ptr.Elem()
		}
		if named, ok := t.(*types.Named); ok {
			return named.Obj().Name() + "." + obj.Name(), true
		}
		return "interface." + obj.Name(), true
	case *types.Var:
		if obj.Parent() == obj.Pkg().Scope() {
			return obj.Name(), false
		}
	}
	return "", false
}

// funcKey is a called function's key; a method of an interface is
// "method M", any method of that name.
func funcKey(f *types.Func) string {
	if recv := f.Signature().Recv(); recv != nil && types.IsInterface(recv.Type()) {
		return "method " + f.Name()
	}
	return f.Origin().FullName()
}

func forbidden(path, name string) bool {
	names, ok := forbiddenCalls[path]
	return ok && (len(names) == 0 || slices.Contains(names, name))
}

// functionsOf is every function of pkg.
func (s *source) functionsOf(pkg string) []string {
	var keys []string
	for key, fn := range s.funcs {
		if fn.pkg == pkg {
			keys = append(keys, key)
		}
	}
	return keys
}

// alwaysRun is what may run without a call the graph shows: every
// package's initialisation, and the methods of packages other than
// root, which the standard library, the SDK and expr call through
// interfaces (String, MarshalJSON) and reflection.
func (s *source) alwaysRun(root string) []string {
	var keys []string
	for key, fn := range s.funcs {
		if strings.HasSuffix(key, ".init") || fn.method && fn.pkg != root {
			keys = append(keys, key)
		}
	}
	return keys
}

// workflowFunctions are pkg's functions whose first parameter is a
// workflow.Context: the workflow and the code it runs in its coroutines.
func (s *source) workflowFunctions(pkg string) []string {
	var keys []string
	for _, f := range s.files[pkg] {
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			params := s.info[pkg].Defs[fd.Name].(*types.Func).Signature().Params()
			if params.Len() > 0 && isWorkflowContext(params.At(0).Type()) {
				keys = append(keys, s.info[pkg].Defs[fd.Name].(*types.Func).FullName())
			}
		}
	}
	return keys
}

// isWorkflowContext reports whether t is workflow.Context, an alias of
// the SDK's internal type.
func isWorkflowContext(t types.Type) bool {
	return types.TypeString(t, nil) == "go.temporal.io/sdk/workflow.Context" ||
		types.TypeString(types.Unalias(t), nil) == "go.temporal.io/sdk/internal.Context"
}

// reach is every function the roots can reach.
func (s *source) reach(roots []string) map[string]bool {
	reached := map[string]bool{}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		key := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if name, ok := strings.CutPrefix(key, "method "); ok {
			queue = append(queue, s.methods[name]...)
			continue
		}
		if reached[key] || s.funcs[key] == nil {
			continue // seen, or not a function of the scanned source
		}
		reached[key] = true
		queue = append(queue, s.funcs[key].refs...)
	}
	return reached
}

// importsOf is the packages pkg's reached functions use, each with one
// function that uses it.
func (s *source) importsOf(reached map[string]bool, pkg string) map[string]string {
	by := map[string]string{}
	for key := range reached {
		if fn := s.funcs[key]; fn.pkg == pkg {
			for path := range fn.imports {
				if path != pkg {
					by[path] = short(key)
				}
			}
		}
	}
	return by
}

// check fails for each forbidden use in a reached function that allowed
// does not justify, and for each entry of allowed that matched nothing.
func (s *source) check(t *testing.T, reached map[string]bool, allowed map[string]string) {
	t.Helper()
	keys := make([]string, 0, len(reached))
	for key := range reached {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		for _, ref := range s.funcs[key].refs {
			if !strings.HasPrefix(ref, "method ") && inModule(keyPackage(ref)) && s.funcs[ref] == nil {
				t.Errorf("%s calls %s, which was not scanned", short(key), short(ref))
			}
		}
	}
	matched := map[string]bool{}
	const shown = 25 // a call into the activities reaches hundreds
	found := 0
	for _, key := range keys {
		for _, u := range s.funcs[key].uses {
			id := short(key) + ": " + short(u.what)
			if _, ok := allowed[id]; ok {
				matched[id] = true
				continue
			}
			if found++; found <= shown {
				t.Errorf("%s:%d: %s: pure code may not use it (move it out of reach, or justify it in the allow-list)",
					u.at.Filename, u.at.Line, id)
			}
		}
	}
	if found > shown {
		t.Errorf("and %d more", found-shown)
	}
	for id := range allowed {
		if !matched[id] {
			t.Errorf("the allow-list has %q, which nothing uses any more: remove it", id)
		}
	}
	if len(keys) < 20 {
		t.Errorf("only %d functions reached: is the scan reading the code?", len(keys))
	}
}

// keyPackage is the package of a function's key: pkg.F, (pkg.T).M or
// (*pkg.T).M.
func keyPackage(key string) string {
	key = strings.TrimLeft(key, "(*")
	slash := strings.LastIndex(key, "/")
	if dot := strings.Index(key[slash+1:], "."); dot >= 0 {
		return key[:slash+1+dot]
	}
	return key
}

// short is a key without the module's path.
func short(key string) string { return strings.ReplaceAll(key, module+"/", "") }
