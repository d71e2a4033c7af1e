package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/triggers"
)

// cachedPipeline writes a phases.yaml naming a spec with frontmatter, a
// program by a path that is not there, and expressions in both files,
// and returns the folder; the test runs in it.
func cachedPipeline(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	write(t, "phases.yaml", `version: 1
name: cached
spec: spec.md
agent: {kind: claude, model: sonnet, env: {A: "1"}}
notify: {webhook: [{url: "https://example.com/x", format: slack, on: [paused]}]}
on: {paused: [./hook.sh]}
watch: ["**/*.md"]
defaults:
  pause_when:
    tokens: tokens > 15000
    cost: cost_usd > spec.budget
    spin: 'tokens % attempt > 1'
  retry: {backoff: duration("10s") * consecutive_errors}
phases:
  - name: design
    prompt: Design it.
  - name: build
    when: spec.priority != "low"
    writes: ["src/**"]
    steps:
      - agent: {model: opus}
        prompt: Build it.
      - name: test
        run: ./check.sh --all
        timeout: 10m
    done_when: steps.test.exit_code == 0
`)
	write(t, "spec.md", "---\nbudget: 3\npriority: high\nlist: [1, 2.5, x, true, null]\npipeline:\n  defaults: {restart_when: {ctx: context_tokens > 1000}}\n---\n# The spec\nbody\n")
	return dir
}

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// planJSON is what plan -o json prints of a plan, with its warnings and
// the digest it would have with another frontmatter.
func planJSON(t *testing.T, plan *Plan) string {
	t.Helper()
	out, err := json.MarshalIndent(plan, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s\nredigest %s\nwarnings %s", out, plan.DigestWithSpec([]byte("---\nx: 1\n---\n")), renderWarnings(plan.Warnings))
}

func renderWarnings(list []Problem) string {
	var b strings.Builder
	for _, p := range list {
		fmt.Fprintf(&b, "%s %s %q %d\n", p.Position, p.Message, p.Source, p.caret)
	}
	return b.String()
}

// loadCached loads through the cache in dir and says whether the plan
// came from it: a cached plan's expressions are not compiled yet.
func loadCached(t *testing.T, dir string) (*Plan, bool) {
	t.Helper()
	forgetLoaded()
	plan, err := LoadCached("phases.yaml", "", dir)
	if err != nil {
		t.Fatal(err)
	}
	p := plan.Phases[0].PauseWhen[0].Expr.program
	return plan, p.lines != nil
}

func TestPlanCacheGivesThePlanLoadGives(t *testing.T) {
	cachedPipeline(t)
	cache := t.TempDir()
	fresh, err := Load("phases.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	first, hit := loadCached(t, cache)
	if hit {
		t.Fatal("the first load came from an empty cache")
	}
	second, hit := loadCached(t, cache)
	if !hit {
		t.Fatal("the second load did not come from the cache")
	}
	for name, plan := range map[string]*Plan{"first": first, "cached": second} {
		if got, want := planJSON(t, plan), planJSON(t, fresh); got != want {
			t.Errorf("%s plan differs from Load's:\n%s\nwant:\n%s", name, got, want)
		}
	}
	if !strings.Contains(renderWarnings(second.Warnings), "./check.sh does not exist") {
		t.Errorf("the cached plan lost the missing program's warning: %s", renderWarnings(second.Warnings))
	}
	// Expressions compile at their first use and read the spec's values.
	cost := second.Phases[1].PauseWhen[2]
	fired, err := cost.Expr.Program().Eval(&triggers.Env{CostUSD: 4, Spec: second.SpecValues})
	if err != nil || !fired {
		t.Errorf("cost_usd > spec.budget with 4 > 3: %v %v", fired, err)
	}
	if second.Phases[1].Steps[1].Agent != nil || *second.Phases[1].Steps[0].Prompt != (Setting[string]{"Build it.", second.Phases[1].Steps[0].Prompt.From}) {
		t.Errorf("steps: %+v", second.Phases[1].Steps)
	}
}

func TestPlanCacheRunTimeErrorsNameTheirPlace(t *testing.T) {
	cachedPipeline(t)
	cache := t.TempDir()
	fresh, _ := Load("phases.yaml", "")
	loadCached(t, cache)
	cached, hit := loadCached(t, cache)
	if !hit {
		t.Fatal("not from the cache")
	}
	env := &triggers.Env{Attempt: 0}
	spin := cached.Phases[0].PauseWhen[3]
	_, want := fresh.Phases[0].PauseWhen[3].Expr.Program().Eval(env)
	_, got := spin.Expr.Program().Eval(env)
	if spin.Name != "spin" || want == nil || got == nil || got.Error() != want.Error() || !strings.Contains(got.Error(), "phases.yaml:12:") {
		t.Errorf("run-time error from the cache %v, from the file %v", got, want)
	}
}

func TestPlanCacheIsRebuiltWhenItsSourcesChange(t *testing.T) {
	cachedPipeline(t)
	cache := t.TempDir()
	loadCached(t, cache)

	// The spec's body is not the plan: the entry stays good.
	write(t, "spec.md", "---\nbudget: 3\npriority: high\nlist: [1, 2.5, x, true, null]\npipeline:\n  defaults: {restart_when: {ctx: context_tokens > 1000}}\n---\n# The spec, edited\n")
	if _, hit := loadCached(t, cache); !hit {
		t.Error("an edit of the spec's body missed the cache")
	}
	// Its frontmatter is: the same phases.yaml, another plan.
	write(t, "spec.md", "---\nbudget: 7\npriority: low\n---\n")
	plan, hit := loadCached(t, cache)
	if hit || fmt.Sprint(plan.SpecValues["budget"]) != "7" || len(plan.Phases[0].RestartWhen) != 0 {
		t.Errorf("a new frontmatter: from the cache %v, values %v, restart_when %v", hit, plan.SpecValues, plan.Phases[0].RestartWhen)
	}
	if plan, hit = loadCached(t, cache); !hit || plan.SpecValues["priority"] != "low" {
		t.Errorf("the rebuilt entry: from the cache %v, values %v", hit, plan.SpecValues)
	}
	// phases.yaml: another entry.
	content, _ := os.ReadFile("phases.yaml")
	write(t, "phases.yaml", strings.Replace(string(content), "name: cached", "name: renamed", 1))
	if plan, hit = loadCached(t, cache); hit || plan.Name.Value != "renamed" {
		t.Errorf("an edited phases.yaml: from the cache %v, name %q", hit, plan.Name.Value)
	}
	// A program made since the plan was cached is no longer warned of.
	write(t, "check.sh", "#!/bin/sh\n")
	os.Chmod("check.sh", 0o755)
	if plan, hit = loadCached(t, cache); !hit || strings.Contains(renderWarnings(plan.Warnings), "check.sh") {
		t.Errorf("from the cache %v; warnings: %s", hit, renderWarnings(plan.Warnings))
	}
	// A spec gone: the error Load gives.
	os.Remove("spec.md")
	if _, err := LoadCached("phases.yaml", "", cache); err == nil || !strings.Contains(err.Error(), "spec file spec.md does not exist") {
		t.Errorf("a missing spec through the cache: %v", err)
	}
}

// forgetLoaded empties the process's memo of plans, so that a load reads
// the cache folder.
func forgetLoaded() {
	loaded.mu.Lock()
	clear(loaded.byID)
	loaded.mu.Unlock()
}

func TestPlanLoadedTwiceInAProcessIsDecodedOnce(t *testing.T) {
	cachedPipeline(t)
	cache := t.TempDir()
	first, _ := loadCached(t, cache)
	second, err := LoadCached("phases.yaml", "", cache)
	if err != nil {
		t.Fatal(err)
	}
	if &first.Phases[0] != &second.Phases[0] || planJSON(t, first) != planJSON(t, second) {
		t.Error("the second load in the process made its plan again")
	}
	write(t, "check.sh", "#!/bin/sh\n")
	os.Chmod("check.sh", 0o755)
	third, _ := LoadCached("phases.yaml", "", cache)
	if strings.Contains(renderWarnings(third.Warnings), "check.sh") || !strings.Contains(renderWarnings(first.Warnings), "check.sh") {
		t.Errorf("the warnings of a plan loaded again are not of now: %s", renderWarnings(third.Warnings))
	}
	write(t, "spec.md", "---\nbudget: 9\n---\n")
	fourth, err := LoadCached("phases.yaml", "", cache)
	if err != nil || fmt.Sprint(fourth.SpecValues["budget"]) != "9" {
		t.Errorf("a spec whose frontmatter changed: %v %v", fourth.SpecValues, err)
	}
}

func TestPlanHeadIsReadFromTheCacheAlone(t *testing.T) {
	cachedPipeline(t)
	cache := t.TempDir()
	fresh, err := Load("phases.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	if head, hit := headCached(t, cache); hit || !reflect.DeepEqual(head, fresh.Head()) {
		t.Fatalf("the head of an empty cache: %+v (from the cache: %v), want %+v", head, hit, fresh.Head())
	}
	head, hit := headCached(t, cache)
	if !hit || !reflect.DeepEqual(head, fresh.Head()) {
		t.Fatalf("the head of a cached plan: %+v (from the cache: %v), want %+v", head, hit, fresh.Head())
	}
	// The plan loaded after its head, in the same process, is the whole
	// plan, not the head's memo.
	plan, err := LoadCached("phases.yaml", "", cache)
	if err != nil || planJSON(t, plan) != planJSON(t, fresh) {
		t.Errorf("the plan loaded after its head differs from Load's: %v", err)
	}
	write(t, "spec.md", "---\nbudget: 9\n---\n")
	if _, hit := headCached(t, cache); hit {
		t.Error("the head was read from the cache after the spec's frontmatter changed")
	}
}

// TestPlanCodecWritesWhatPhasesShareOnce round-trips phases that share
// some of their settings with the phase before them and not others: the
// shared ones are read as the previous phase's, and the plan is Load's.
func TestPlanCodecWritesWhatPhasesShareOnce(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	write(t, "phases.yaml", `version: 1
name: shared
agent: {kind: claude}
defaults:
  pause_when: {tokens: tokens > 100, time: elapsed > duration("1h")}
  restart_when: {errors: consecutive_errors >= 3}
  retry: {backoff: duration("10s")}
phases:
  - name: a
  - name: b
    pause_when: {cost: cost_usd > 1}
  - name: c
    timeout: 5m
    retry: {when: exit_code == 2}
    restart_when: {errors: consecutive_errors >= 5}
  - name: d
    steps: [{name: t, run: ./t.sh, timeout: 1m}, {name: u, run: ./u.sh}]
  - name: e
    prompt: Do e.
    auto_advance: false
    steps: [{name: t, run: ./t.sh, timeout: 1m}, {name: u, run: ./v.sh, idle_timeout: 2m}, {name: w, run: ./w.sh}]
  - name: f
`)
	fresh, err := Load("phases.yaml", "")
	if err != nil {
		t.Fatal(err)
	}
	_, refs, _, err := load(mustParse(t, "phases.yaml"), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	payload, _, err := encodePlan(fresh, refs)
	if err != nil {
		t.Fatal(err)
	}
	got, _, ok := decodePlan(string(payload), func(string) func() []string { return nil })
	if !ok {
		t.Fatal("does not decode")
	}
	if a, b := planJSON(t, got), planJSON(t, fresh); a != b {
		t.Errorf("the decoded plan differs from Load's:\n%s\nwant:\n%s", a, b)
	}
	p := got.Phases
	if &p[0].RestartWhen[0] != &p[1].RestartWhen[0] || &p[3].RestartWhen[0] == &p[2].RestartWhen[0] {
		t.Error("restart_when, as the phase before's, is not shared with it (or c's own is)")
	}
	if mask := sameAsBefore(&fresh.Phases[1], &fresh.Phases[0]); mask&samePauseWhen != 0 || mask&sameRestartWhen == 0 || mask&sameRetry == 0 {
		t.Errorf("b's mask against a: %b", mask)
	}
}

func mustParse(t *testing.T, path string) *Document {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Parse(path, content)
	if doc == nil {
		t.Fatal(err)
	}
	return doc
}

// FuzzPlanDecode feeds the plan decoders bytes that are not all
// encodePlan's: they fail, never panic.
func FuzzPlanDecode(f *testing.F) {
	doc, err := Parse("phases.yaml", []byte(manyPhasesYAML(3)))
	if doc == nil {
		f.Fatal(err)
	}
	plan, err := Resolve(doc, nil, ".")
	if err != nil {
		f.Fatal(err)
	}
	payload, headLen, err := encodePlan(plan, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload, headLen)
	f.Add(payload[:len(payload)/2], headLen)
	f.Fuzz(func(t *testing.T, payload []byte, headLen int) {
		decodePlan(string(payload), func(string) func() []string { return nil })
		decodeHead(string(payload[:max(0, min(headLen, len(payload)))]))
	})
}

// entryOf is the one entry of a cache folder.
func entryOf(t *testing.T, cache string) string {
	t.Helper()
	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) != 1 {
		t.Fatalf("cache %v: %v", entries, err)
	}
	return filepath.Join(cache, entries[0].Name())
}

func TestPlanCacheNeverTrustsABrokenEntry(t *testing.T) {
	cachedPipeline(t)
	cache := t.TempDir()
	fresh, _ := Load("phases.yaml", "")
	want, wantHead := planJSON(t, fresh), fresh.Head()
	loadCached(t, cache)
	path := entryOf(t, cache)
	good, _ := os.ReadFile(path)
	headEnd := headerSize + int(beUint32(good[headerSize-16:]))
	check := func(what string, content []byte, mode os.FileMode) {
		t.Helper()
		for _, headOnly := range []bool{false, true} {
			if err := os.WriteFile(path, content, mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, mode)
			if !headOnly {
				plan, hit := loadCached(t, cache)
				if hit {
					t.Errorf("%s: read from the cache", what)
				}
				if got := planJSON(t, plan); got != want {
					t.Errorf("%s: the plan differs from Load's", what)
				}
				continue
			}
			// The head alone may be read from an entry whose key, spec
			// digest, head and head's length and checksum are as
			// written, and only then: the phases it does not read are
			// the payload's checksum's to check.
			head, hit := headCached(t, cache)
			sums := len(cacheMagic) + 2*sha256.Size
			intact := len(content) >= headEnd && bytes.Equal(content[:sums+8], good[:sums+8]) &&
				bytes.Equal(content[headerSize:headEnd], good[headerSize:headEnd]) && mode == 0o600
			if hit && !intact {
				t.Errorf("%s: the head was read from the cache", what)
			}
			if !reflect.DeepEqual(head, wantHead) {
				t.Errorf("%s: the head %+v differs from Load's %+v", what, head, wantHead)
			}
		}
	}
	for _, n := range []int{0, 1, len(cacheMagic), headerSize - 1, headerSize, headerSize + 1, headEnd - 1, headEnd, len(good) / 2, len(good) - 1} {
		check(fmt.Sprintf("cut to %d bytes", n), good[:n], 0o600)
	}
	sums := len(cacheMagic) + 2*sha256.Size
	for _, at := range []int{0, len(cacheMagic) + 3, len(cacheMagic) + 40, sums + 1, sums + 5, sums + 9, headerSize - 2, headerSize + 5, headEnd - 1, headEnd, len(good) - 1} {
		bad := append([]byte(nil), good...)
		bad[at] ^= 0x20
		check(fmt.Sprintf("byte %d flipped", at), bad, 0o600)
	}
	check("writable by others", good, 0o666)
	check("extra bytes", append(append([]byte(nil), good...), 0), 0o600)

	// A payload and head that pass their checksums and lengths but were
	// not written by encodePlan: refused, never a panic.
	for i, payload := range []string{"", "\x05", "\x01\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", strings.Repeat("\x02", 100),
		string(good[headerSize : headerSize+(len(good)-headerSize)/3]), string(good[headerSize:headEnd])} {
		for _, headLen := range []int{0, len(payload) / 2, len(payload)} {
			forged := append([]byte(nil), good[:sums]...)
			forged = appendUint32(forged, uint32(headLen))
			forged = appendUint32(forged, crc32Of([]byte(payload[:headLen])))
			forged = appendUint32(forged, uint32(len(payload)))
			forged = appendUint32(forged, crc32Of([]byte(payload)))
			check(fmt.Sprintf("forged payload %d, head of %d bytes", i, headLen), append(forged, payload...), 0o600)
		}
	}
	os.Remove(path)
	os.Mkdir(path, 0o700)
	if plan, hit := loadCached(t, cache); hit || planJSON(t, plan) != want {
		t.Error("an entry that is a folder")
	}
}

// headCached loads the head through the cache in dir and says whether it
// came from it: a head read from the cache is remembered without its
// plan.
func headCached(t *testing.T, dir string) (*PlanHead, bool) {
	t.Helper()
	forgetLoaded()
	head, err := LoadCachedHead("phases.yaml", "", dir)
	if err != nil {
		t.Fatal(err)
	}
	loaded.mu.Lock()
	defer loaded.mu.Unlock()
	for _, m := range loaded.byID {
		return head, m.made == nil
	}
	return head, false
}

func crc32Of(b []byte) uint32 { return checksum(b) }

// TestPlanCodecCoversEveryField fills every field of a Plan, and of what
// it holds, with a value of its own, and fails for each that does not
// come back from the cache's encoding: a field added to the plan must be
// added to the codec.
func TestPlanCodecCoversEveryField(t *testing.T) {
	var plan Plan
	n := 0
	fill(reflect.ValueOf(&plan).Elem(), &n, 0)
	plan.SpecValues = map[string]any{"i": 1, "i64": int64(-2), "u": uint64(3), "f": 2.5, "s": "x", "b": true, "n": nil,
		"l": []any{1, "y"}, "m": map[string]any{"k": []any{}}}
	for i := range plan.Phases {
		for j := range plan.Phases[i].Steps {
			plan.Phases[i].Steps[j].Prompt = ptr(Setting[string]{fmt.Sprintf("own %d %d", i, j), builtIn})
		}
	}
	payload, headLen, err := encodePlan(&plan, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _, ok := decodePlan(string(payload), func(string) func() []string { return nil })
	if !ok {
		t.Fatal("does not decode")
	}
	compare(t, "Plan", reflect.ValueOf(plan), reflect.ValueOf(*got))
	head, ok := decodeHead(string(payload[:headLen]))
	if !ok {
		t.Fatal("the head does not decode")
	}
	compare(t, "PlanHead", reflect.ValueOf(*plan.Head()), reflect.ValueOf(*head.Head()))
}

// fill sets every exported field of v, and what it points to, to a value
// no other field has.
func fill(v reflect.Value, n *int, depth int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Int, reflect.Int64, reflect.Int32:
		if v.Type() == reflect.TypeOf(triggers.Kind(0)) {
			v.SetInt(int64(*n % 3))
			return
		}
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n, depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := 0; i < 2; i++ {
			fill(v.Index(i), n, depth+1)
		}
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.Interface {
			return // SpecValues, filled by the test
		}
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n, depth+1)
		fill(e, n, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n, depth+1)
			}
		}
	}
}

// compare fails for each exported value that differs between want and got.
func compare(t *testing.T, path string, want, got reflect.Value) {
	t.Helper()
	switch want.Kind() {
	case reflect.Pointer:
		if want.IsNil() != got.IsNil() {
			t.Errorf("%s: nil %v, came back nil %v", path, want.IsNil(), got.IsNil())
		} else if !want.IsNil() {
			compare(t, path, want.Elem(), got.Elem())
		}
	case reflect.Struct:
		for i := 0; i < want.NumField(); i++ {
			if want.Type().Field(i).IsExported() {
				compare(t, path+"."+want.Type().Field(i).Name, want.Field(i), got.Field(i))
			}
		}
	case reflect.Slice:
		if want.Len() != got.Len() || want.IsNil() != got.IsNil() {
			t.Errorf("%s: %d items, came back %d", path, want.Len(), got.Len())
			return
		}
		for i := 0; i < want.Len(); i++ {
			compare(t, fmt.Sprintf("%s[%d]", path, i), want.Index(i), got.Index(i))
		}
	default:
		if !reflect.DeepEqual(want.Interface(), got.Interface()) {
			t.Errorf("%s: %v came back as %v", path, want.Interface(), got.Interface())
		}
	}
}

// BenchmarkLoadCached is a load of plans of 1, 100 and 1,000 phases from
// the plan cache, as a command's first load in its process, beside
// Load's from the files.
func BenchmarkLoadCached(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		dir := b.TempDir()
		b.Chdir(dir)
		content := manyPhasesYAML(n)
		if err := os.WriteFile("phases.yaml", []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		cache := filepath.Join(dir, "plans")
		b.Run(fmt.Sprintf("phases=%d/cache", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				forgetLoaded()
				plan, err := LoadCached("phases.yaml", "", cache)
				if err != nil || len(plan.Phases) != n {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("phases=%d/files", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load("phases.yaml", ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// manyPhasesYAML is cmd/bench -status's plan of n phases.
func manyPhasesYAML(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: big\ndefaults:\n  auto_advance: false\n  pause_when:\n    tokens: tokens > 15000\n" +
		"    time: elapsed > duration(\"30m\")\n  restart_when:\n    errors: consecutive_errors >= 3\n  retry:\n" +
		"    when: exit_code != 0 || timed_out\n    backoff: duration(\"10s\") * consecutive_errors\nphases:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: p%d\n    steps: [{name: t, run: \"true\"}]\n    pause_when: {cost: cost_usd > %d.5 && spec.priority != \"high\"}\n"+
			"    done_when: steps.t.exit_code == 0\n", i, i)
	}
	return b.String()
}

// BenchmarkReadBuildID is what finding the binary's build ID costs, once
// per process that uses the cache.
func BenchmarkReadBuildID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if readBuildID() == "" {
			b.Fatal("no build ID")
		}
	}
}
