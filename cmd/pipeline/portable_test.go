package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipeline-dev/pipeline/internal/filetree"
)

// Issue 11: a session goes on in a later CI job, on another machine, in
// another checkout path: its .pipeline/ copied with the project (a CI
// cache), or exported to one file and imported there (an artifact).

// portableAgent pauses once at a checkpoint in the design phase and keeps
// every prompt it gets; it is a kind: command agent, which has no native
// session to lose (the real CLIs' lost sessions: portable_agents_test.go).
const portableAgent = `#!/bin/sh
prompt=$(cat)
printf '%s\n' "$prompt" > "prompt-$PIPELINE_PHASE-$PIPELINE_ATTEMPT.txt"
if [ "$PIPELINE_PHASE" = design ] && [ ! -f checkpointed ]; then
  : > checkpointed
  echo "[CHECKPOINT] draft ready"
  sleep 30
fi
echo "finished $PIPELINE_PHASE"
`

// portableProject is a project in a folder of its own, paused at the
// design phase's checkpoint by a run with a HOME of its own.
func portableProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkout-1", "project")
	write(t, dir, "agent.sh", portableAgent)
	if err := os.Chmod(filepath.Join(dir, "agent.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "specs/greeting/README.md", "---\nstatus: planned\n---\n# Greeting\nSay hello.\n")
	write(t, dir, "phases.yaml", `version: 1
name: portable
spec: specs/greeting/README.md
agent: {kind: command, command: [./agent.sh], feature: greeting}
defaults:
  pause_when: {checkpoint: checkpoint}
phases: [{name: design}, {name: build}]
`)
	r := pipelineEnv(t, dir, freshHome(t), "run", "--grace", "1s")
	if r.code != exitPaused {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return dir
}

// freshHome is this process's environment with an empty HOME: a machine
// where no agent CLI ever kept a session.
func freshHome(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "CI=true"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "CI=") &&
			!strings.HasPrefix(kv, "PIPELINE_STATE_DIR=") {
			env = append(env, kv)
		}
	}
	return env
}

// moveProject copies the project at from to another path and removes it
// from where it was: nothing can be read from the old checkout.
func moveProject(t *testing.T, from string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "another", "checkout", "path")
	filetree.Copy(t, from, to)
	if err := os.RemoveAll(from); err != nil {
		t.Fatal(err)
	}
	return to
}

// noPathUnder fails when a file under root names path.
func noPathUnder(t *testing.T, root, path string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(content, []byte(path)) {
			t.Errorf("%s names %s: %.200s", p, path, content)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// statusIn runs status -o json in dir with env.
func statusIn(t *testing.T, dir string, env []string, args ...string) statusJSON {
	t.Helper()
	return decodeStatus(t, pipelineEnv(t, dir, env, append([]string{"status", "-o", "json"}, args...)...))
}

// The test: .pipeline/ of a paused session, copied with the
// project to another checkout path (a CI cache restored in a later job),
// with a fresh HOME, is resumed there and completes.
func TestPausedSessionResumesInAnotherCheckoutWithAFreshHome(t *testing.T) {
	first := portableProject(t)
	before := status(t, first)
	events := eventsOf(t, filepath.Join(first, ".pipeline"), before.ID)
	dir := moveProject(t, first)
	noPathUnder(t, filepath.Join(dir, ".pipeline"), first)

	env := freshHome(t)
	if s := statusIn(t, dir, env); s.ID != before.ID || s.Status != "paused" || s.PauseReason != "checkpoint" {
		t.Fatalf("status in the new checkout: %+v", s)
	}
	// The spec changed between the jobs: the resume context says so.
	write(t, dir, "specs/greeting/README.md", "---\nstatus: planned\n---\n# Greeting\nSay hello twice.\n")
	r := pipelineEnv(t, dir, env, "resume", "--notes", "go on in the new job")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	prompt, err := os.ReadFile(filepath.Join(dir, "prompt-design-1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[Resume context]", "go on in the new job", "+Say hello twice.", "Spec: specs/greeting/README.md"} {
		if !strings.Contains(string(prompt), want) {
			t.Errorf("the resumed prompt lacks %q:\n%s", want, prompt)
		}
	}
	after := statusIn(t, dir, env)
	if after.ID != before.ID || after.Status != "completed" || after.Phases[0].Human != 1 {
		t.Errorf("status after the resume: %+v", after)
	}
	if now := eventsOf(t, filepath.Join(dir, ".pipeline"), before.ID); !bytes.HasPrefix(now, events) || len(now) == len(events) {
		t.Errorf("the event log was not continued:\nbefore\n%s\nafter\n%s", events, now)
	}
	var list []struct {
		ID   string `json:"id"`
		File string `json:"file"`
		Spec string `json:"spec"`
	}
	r = pipelineEnv(t, dir, env, "sessions", "-o", "json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("sessions: %v %s", err, r.stdout)
	}
	if list[0].File != filepath.Join(dir, "phases.yaml") || list[0].Spec != filepath.Join(dir, "specs", "greeting", "README.md") {
		t.Errorf("sessions shows %+v, want the files of the new checkout", list[0])
	}
	// The next run is a new session of the same pipeline and spec, not a
	// second key for them.
	if r := pipelineEnv(t, dir, env, "run"); r.code != 0 || strings.Contains(r.stderr, "resuming") {
		t.Errorf("run after the completion: exit %d, %s", r.code, r.stderr)
	}
}

// A state folder apart from the project (--state-dir) keeps its paths
// relative to the folder that holds it: both moved together, the session
// goes on.
func TestStateDirElsewhereMovesWithTheProject(t *testing.T) {
	root := filepath.Join(t.TempDir(), "ci-workspace")
	dir := filepath.Join(root, "src", "project")
	state := filepath.Join(root, "state", "pipeline")
	write(t, dir, "agent.sh", portableAgent)
	os.Chmod(filepath.Join(dir, "agent.sh"), 0o755)
	write(t, dir, "phases.yaml", "version: 1\nagent: {kind: command, command: [./agent.sh]}\ndefaults: {pause_when: {checkpoint: checkpoint}}\nphases: [{name: design}, {name: build}]\n")
	if r := pipelineEnv(t, dir, freshHome(t), "run", "--grace", "1s", "--state-dir", state); r.code != exitPaused {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	meta, _ := filepath.Glob(filepath.Join(state, "sessions", "*", "meta.json"))
	if content, _ := os.ReadFile(meta[0]); !strings.Contains(string(content), `"file": "../src/project/phases.yaml"`) {
		t.Errorf("meta.json: %s", content)
	}
	moved := moveProject(t, root)
	dir, state = filepath.Join(moved, "src", "project"), filepath.Join(moved, "state", "pipeline")
	if r := pipelineEnv(t, dir, freshHome(t), "resume", "--state-dir", state); r.code != 0 {
		t.Fatalf("resume: exit %d, %s", r.code, r.stderr)
	}
	if s := statusIn(t, dir, freshHome(t), "--state-dir", state); s.Status != "completed" {
		t.Errorf("status %+v", s)
	}
}

// comparableStatus is status -o json with the paths of the checkout
// taken out: the same session in two checkouts says the same otherwise.
func comparableStatus(t *testing.T, dir string, env []string, id string) string {
	t.Helper()
	r := pipelineEnv(t, dir, env, "status", "-o", "json", id)
	if r.code != 0 {
		t.Fatalf("status: exit %d, %s", r.code, r.stderr)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"file", "spec"} {
		if v, _ := s[k].(string); v != "" && !strings.HasPrefix(v, dir) {
			t.Errorf("status %s %q is not in %s", k, v, dir)
		}
		s[k] = strings.TrimPrefix(s[k].(string), dir)
	}
	out, _ := json.MarshalIndent(s, "", "  ")
	return string(out)
}

// The test, through a file: export, import in another checkout
// with a fresh HOME (and resume --session-file), and it is the same
// session, its events, counters and history; it goes on there.
func TestExportImportIsTheSameSessionAndResumesElsewhere(t *testing.T) {
	first := portableProject(t)
	id := status(t, first).ID
	archive := filepath.Join(t.TempDir(), "session.tar.gz")
	r := pipeline(t, first, "export", "-o", archive)
	if r.code != 0 || !strings.Contains(r.stderr, "exported session "+id+" (paused: checkpoint") {
		t.Fatalf("export: exit %d, %s", r.code, r.stderr)
	}
	if info, err := os.Stat(archive); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the archive: %v %v, want mode 0600", info, err)
	}
	wantStatus := comparableStatus(t, first, nil, id)
	wantEvents := eventsOf(t, filepath.Join(first, ".pipeline"), id)
	transcripts, _ := filepath.Glob(filepath.Join(first, ".pipeline", "sessions", id, "transcripts", "*", "*.log"))
	prompts, _ := filepath.Glob(filepath.Join(first, ".pipeline", "sessions", id, "transcripts", "*", "*.prompt"))

	// A fresh checkout of the project, in another path, on a machine with
	// no agent session: no .pipeline/, and the checkout's own files only.
	dir := moveProject(t, first)
	if err := os.RemoveAll(filepath.Join(dir, ".pipeline")); err != nil {
		t.Fatal(err)
	}
	env := freshHome(t)
	r = pipelineEnv(t, dir, env, "import", archive)
	if r.code != 0 || !strings.Contains(r.stderr, "imported session "+id+" (paused: checkpoint, phase design)") || strings.Contains(r.stderr, "warning") {
		t.Fatalf("import: exit %d, %s", r.code, r.stderr)
	}
	if got := comparableStatus(t, dir, env, id); got != wantStatus {
		t.Errorf("status after the import:\n%s\nbefore the export:\n%s", got, wantStatus)
	}
	if got := eventsOf(t, filepath.Join(dir, ".pipeline"), id); !bytes.Equal(got, wantEvents) {
		t.Errorf("the event log after the import differs:\n%s\nbefore:\n%s", got, wantEvents)
	}
	for _, tr := range transcripts {
		rel, _ := filepath.Rel(first, tr)
		if got, err := os.ReadFile(filepath.Join(dir, rel)); err != nil || !bytes.Contains(got, []byte("[CHECKPOINT] draft ready")) {
			t.Errorf("transcript %s: %v %q", rel, err, got)
		}
	}
	if len(transcripts) == 0 {
		t.Error("the session had no transcript")
	}
	// The prompts sent come along with the transcripts.
	for _, p := range prompts {
		rel, _ := filepath.Rel(first, p)
		if got, err := os.ReadFile(filepath.Join(dir, rel)); err != nil || !bytes.Contains(got, []byte(`Carry out the "design" phase`)) {
			t.Errorf("prompt %s: %v %q", rel, err, got)
		}
	}
	if len(prompts) == 0 {
		t.Error("the session kept no prompt")
	}
	// The same archive again: nothing changes.
	if r := pipelineEnv(t, dir, env, "import", archive); r.code != 0 || !strings.Contains(r.stderr, "session "+id+" (paused: checkpoint, phase design) from "+archive+" is already in") {
		t.Errorf("a second import: exit %d, %s", r.code, r.stderr)
	}
	r = pipelineEnv(t, dir, env, "resume", "--notes", "imported")
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if s := statusIn(t, dir, env); s.ID != id || s.Status != "completed" {
		t.Errorf("after the resume: %+v", s)
	}
	// Completed there, it differs from the archive: not replaced unless
	// asked.
	r = pipelineEnv(t, dir, env, "import", archive)
	if r.code != exitUsage || !strings.Contains(r.stderr, "differs") || !strings.Contains(r.stderr, "--replace") {
		t.Errorf("importing an older version: exit %d, %s", r.code, r.stderr)
	}
	if r := pipelineEnv(t, dir, env, "import", "--replace", archive); r.code != 0 || !strings.Contains(r.stderr, "replaced session "+id+" with the one from "+archive) {
		t.Fatalf("import --replace: exit %d, %s", r.code, r.stderr)
	}
	if s := statusIn(t, dir, env); s.Status != "paused" {
		t.Errorf("after the replacement: %+v", s)
	}

	// resume --session-file: import and resume in one step, in yet
	// another fresh checkout.
	third := moveProject(t, dir)
	if err := os.RemoveAll(filepath.Join(third, ".pipeline")); err != nil {
		t.Fatal(err)
	}
	if r := pipeline(t, third, "resume", "--session-file", archive, "20991231"); r.code != exitUsage || !strings.Contains(r.stderr, "holds session "+id) {
		t.Errorf("resume --session-file with another id: exit %d, %s", r.code, r.stderr)
	}
	r = pipelineEnv(t, third, freshHome(t), "resume", "--session-file", archive, id[:12])
	if r.code != 0 || !strings.Contains(r.stderr, "is already in") {
		t.Fatalf("resume --session-file: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if s := statusIn(t, third, freshHome(t)); s.ID != id || s.Status != "completed" {
		t.Errorf("after resume --session-file: %+v", s)
	}
	// In a fourth checkout, the archive is imported by the resume.
	fourth := moveProject(t, third)
	os.RemoveAll(filepath.Join(fourth, ".pipeline"))
	r = pipelineEnv(t, fourth, freshHome(t), "resume", "--session-file", archive)
	if r.code != 0 || !strings.Contains(r.stderr, "imported session "+id) {
		t.Fatalf("resume --session-file: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// export hides the secrets of its own environment too: a value that was
// not a secret where the session ran is one where it is exported.
func TestExportRedactsWithTheExportersSecrets(t *testing.T) {
	dir := t.TempDir()
	const value = "exp0rt-only-c0nfidential-v4lue"
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'echo the value is "+value+"'}]}]\n")
	if r := pipeline(t, dir, "run"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	if r := pipeline(t, dir, "logs"); !strings.Contains(r.stdout, value) {
		t.Fatalf("the value is not in the session: %s", r.stdout)
	}
	archive := filepath.Join(dir, "s.tar.gz")
	env := append(os.Environ(), "RELEASE_TOKEN="+value)
	if r := pipelineEnv(t, dir, env, "export", "-o", archive); r.code != 0 {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	content := archiveText(t, archive)
	if strings.Contains(content, value) || !strings.Contains(content, "[REDACTED:RELEASE_TOKEN]") {
		t.Errorf("the archive shows the exporter's secret:\n%s", content)
	}
}

// archiveText is every entry of an archive, one after another.
func archiveText(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var b strings.Builder
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("== " + hdr.Name + "\n")
		io.Copy(&b, tr)
	}
}

// A running session is not exported (its files would be torn); a hostile
// archive is refused with exit 2 and leaves the store as it was.
func TestExportRefusesARunningSessionAndImportAHostileArchive(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "phases.yaml", "version: 1\nphases: [{name: a, steps: [{run: 'echo started; sleep 30'}]}]\n")
	run := pipelineStart(t, dir, "run", "--grace", "1s")
	run.await(t, "| started")
	r := pipeline(t, dir, "export", "-o", filepath.Join(dir, "s.tar.gz"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "is running") {
		t.Errorf("export of a running session: exit %d, %s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.tar.gz")); err == nil {
		t.Error("an archive was written")
	}
	run.cmd.Process.Signal(os.Interrupt)
	if code := run.exit(t); code != exitPaused {
		t.Fatalf("the run: exit %d", code)
	}

	// A tar whose session file is a link to a file of the user's.
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	manifest := `{"kind":"pipeline-session","format":1,"store_format":2,"session":"20261125-093000123-a1b2c3","files":[{"name":"meta.json","size":0,"sha256":"` + strings.Repeat("0", 64) + `"}]}`
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "manifest.json", Size: int64(len(manifest)), Mode: 0o600})
	tw.Write([]byte(manifest))
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "20261125-093000123-a1b2c3/meta.json", Linkname: filepath.Join(dir, "phases.yaml")})
	tw.Close()
	gz.Close()
	write(t, dir, "hostile.tar.gz", b.String())
	before := filetree.Of(t, filepath.Join(dir, ".pipeline"))
	r = pipeline(t, dir, "import", "hostile.tar.gz")
	if r.code != exitUsage || !strings.Contains(r.stderr, "is a symbolic link: only regular files are imported") {
		t.Errorf("a hostile archive: exit %d, %s", r.code, r.stderr)
	}
	if after := filetree.Of(t, filepath.Join(dir, ".pipeline")); len(after) != len(before) {
		t.Errorf("the store changed: %d entries, then %d", len(before), len(after))
	}
	if r := pipeline(t, dir, "import", "--max-size", "lots", "hostile.tar.gz"); r.code != exitUsage || !strings.Contains(r.stderr, "is not a size") {
		t.Errorf("--max-size lots: exit %d, %s", r.code, r.stderr)
	}
}

// A store written before paths were relative (format 1: absolute paths,
// keys made from them, index lines of 11 fields) keeps working: run and
// resume find its paused session by its pipeline and spec.
func TestAFormat1StoreKeepsWorking(t *testing.T) {
	dir := portableProject(t)
	id := status(t, dir).ID
	root := filepath.Join(dir, ".pipeline")
	// Write the session as format 1 had it.
	metaPath := filepath.Join(root, "sessions", id, "meta.json")
	var meta map[string]any
	content, _ := os.ReadFile(metaPath)
	if err := json.Unmarshal(content, &meta); err != nil {
		t.Fatal(err)
	}
	file, spec := filepath.Join(dir, "phases.yaml"), filepath.Join(dir, "specs", "greeting", "README.md")
	oldKey := "1o3nmhunafx7s" // any key but today's
	meta["format"], meta["file"], meta["spec"], meta["key"] = 1, file, spec, oldKey
	content, _ = json.Marshal(meta)
	write(t, root, "sessions/"+id+"/meta.json", string(content))
	index, _ := os.ReadFile(filepath.Join(root, "index.tsv"))
	var old []string
	for _, line := range strings.Split(strings.TrimSuffix(string(index), "\n"), "\n") {
		f := strings.Split(line, "\t")
		f[1], f[10] = oldKey, spec
		old = append(old, strings.Join(f[:11], "\t"))
	}
	write(t, root, "index.tsv", strings.Join(old, "\n")+"\n")
	// Format 1 kept every snapshot in state.json.
	content, _ = snapshotOf(t, filepath.Join(root, "sessions", id))
	stripStates(t, filepath.Join(root, "sessions", id))
	write(t, root, "sessions/"+id+"/state.json", strings.Replace(string(content), `"format":2`, `"format":1`, 1))

	if s := status(t, dir); s.ID != id || s.Status != "paused" {
		t.Fatalf("status of a format-1 session: %+v", s)
	}
	r := pipeline(t, dir, "run")
	if r.code != 0 || !strings.Contains(r.stderr, "resuming session "+id) {
		t.Fatalf("run: exit %d, %s", r.code, r.stderr)
	}
	if s := status(t, dir); s.ID != id || s.Status != "completed" {
		t.Errorf("after the run: %+v", s)
	}
}

// pipeline watch in the checkout a store was moved to finds its paused
// session, and the spec it names there, and resumes it when that spec
// changes.
func TestWatchFollowsASessionMovedWithItsProject(t *testing.T) {
	first := filepath.Join(t.TempDir(), "first")
	id := watchedPipeline(t, first, "")
	dir := moveProject(t, first)
	w := watchStart(t, dir)
	write(t, dir, "spec.md", "# The spec\n\nBuild it.\nIn the new checkout.\n")
	resumed := w.awaitEvent(t, "resumed", id)
	if resumed.File != "spec.md" || resumed.Change != "spec" {
		t.Errorf("resumed %+v, want for a change of spec.md", resumed)
	}
	w.awaitEvent(t, "paused", id)
	w.stop(t)
	prompt, err := os.ReadFile(filepath.Join(dir, "prompt-two.txt"))
	if err != nil || !strings.Contains(string(prompt), "+In the new checkout.") {
		t.Errorf("the resume context has no diff of the spec: %v\n%s", err, prompt)
	}
}

// A CI job cancelled while its step ran leaves a session marked running:
// exported (which writes nothing to the store) and imported elsewhere,
// it shows as runner-died and resume finishes it there.
func TestACutShortSessionExportsAndFinishesElsewhere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "job-1")
	write(t, dir, "phases.yaml", `version: 1
phases:
  - name: one
    steps: [{run: 'if [ -f ran ]; then echo again; else touch ran; echo started; exec sleep 30; fi'}]
  - name: two
    steps: [{run: 'echo two'}]
`)
	run := pipelineStart(t, dir, "run")
	run.await(t, "| started") // the output, not the header that quotes it
	run.cmd.Process.Kill()
	run.exit(t)
	before := filetree.Of(t, filepath.Join(dir, ".pipeline"))
	archive := filepath.Join(t.TempDir(), "s.tar.gz")
	if r := pipeline(t, dir, "export", "-o", archive); r.code != 0 || !strings.Contains(r.stderr, "(running,") {
		t.Fatalf("export: exit %d, %s", r.code, r.stderr)
	}
	if after := filetree.Of(t, filepath.Join(dir, ".pipeline")); len(after) != len(before) {
		t.Errorf("export wrote to the store:\nbefore %v\nafter  %v", before, after)
	} else {
		for k, v := range before {
			if after[k] != v {
				t.Errorf("export changed %s: %s, then %s", k, v, after[k])
			}
		}
	}
	other := moveProject(t, dir)
	os.RemoveAll(filepath.Join(other, ".pipeline"))
	env := freshHome(t)
	if r := pipelineEnv(t, other, env, "import", archive); r.code != 0 {
		t.Fatalf("import: exit %d, %s", r.code, r.stderr)
	}
	if s := statusIn(t, other, env); s.Status != "paused" || s.PauseReason != "runner-died" {
		t.Errorf("the imported session shows as %+v", s)
	}
	if r := pipelineEnv(t, other, env, "resume"); r.code != 0 || !strings.Contains(r.stdout, "again") {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if s := statusIn(t, other, env); s.Status != "completed" {
		t.Errorf("after the resume: %+v", s)
	}
}
