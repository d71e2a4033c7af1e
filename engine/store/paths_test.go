package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pipeline-dev/pipeline/internal/filetree"
)

// A store copied with its project to another path (a CI cache restored in
// another checkout) names the same files there, under the same keys: its
// files hold no absolute path.
func TestAStoreMovedWithItsProjectKeepsItsSessions(t *testing.T) {
	project := filepath.Join(t.TempDir(), "checkout-a")
	st, err := Open(filepath.Join(project, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	file, spec := filepath.Join(project, "phases.yaml"), filepath.Join(project, "specs", "045", "README.md")
	k := st.Key(file, spec)
	x, err := st.Create(Meta{ID: "s1", Pipeline: "p", File: file, Spec: spec, Key: k, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if x.Meta.File != file || x.Meta.Spec != spec {
		t.Errorf("in memory: %q %q, want the absolute paths", x.Meta.File, x.Meta.Spec)
	}
	if err := x.WriteSnapshot(0, []byte(`{}`), Summary{ID: "s1", Key: k, Pipeline: "p", File: file, Spec: spec, Status: "paused"}); err != nil {
		t.Fatal(err)
	}
	x.Close()
	st.Close()
	var onDisk Meta
	content, _ := os.ReadFile(filepath.Join(x.Dir, "meta.json"))
	if err := json.Unmarshal(content, &onDisk); err != nil || onDisk.File != "phases.yaml" || onDisk.Spec != "specs/045/README.md" || onDisk.Format != Format {
		t.Errorf("meta.json: %s %v", content, err)
	}
	if k != key("phases.yaml", "specs/045/README.md") {
		t.Errorf("the key %s is not made from the relative paths", k)
	}

	moved := filepath.Join(t.TempDir(), "elsewhere", "checkout-b")
	filetree.Copy(t, project, moved)
	if err := os.RemoveAll(project); err != nil {
		t.Fatal(err)
	}
	for rel := range filetree.Of(t, filepath.Join(moved, ".pipeline")) {
		if content, err := os.ReadFile(rel); err == nil && strings.Contains(string(content), project) {
			t.Errorf("%s names the old checkout: %s", rel, content)
		}
	}
	st, err = OpenExisting(filepath.Join(moved, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	movedFile, movedSpec := filepath.Join(moved, "phases.yaml"), filepath.Join(moved, "specs", "045", "README.md")
	if got := st.Key(movedFile, movedSpec); got != k {
		t.Errorf("key in the new checkout %s, want %s", got, k)
	}
	meta, err := st.Find("s1")
	if err != nil || meta.File != movedFile || meta.Spec != movedSpec || meta.Key != k {
		t.Errorf("found %+v %v; want the files of the new checkout", meta, err)
	}
	list, err := st.List()
	if err != nil || len(list) != 1 || list[0].Key != k || list[0].File != movedFile || list[0].Spec != movedSpec {
		t.Errorf("listed %+v %v", list, err)
	}
}

// A session of format 1 (absolute paths, a key made from them, an index
// line without phases.yaml) is read: its paths as they are, its key made
// again from them, so that run and resume find it under the key its
// pipeline and spec have now.
func TestAFormat1SessionIsReadWithTodaysKey(t *testing.T) {
	project := t.TempDir()
	st, err := Open(filepath.Join(project, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	file, spec := filepath.Join(project, "phases.yaml"), filepath.Join(project, "spec.md")
	oldKey := key(file, spec)
	dir := filepath.Join(st.Root, "sessions", "s1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(Meta{Format: 1, ID: "s1", Pipeline: "p", File: file, Spec: spec, Key: oldKey})
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), meta, 0o600); err != nil {
		t.Fatal(err)
	}
	line := strings.Join([]string{"s1", oldKey, "paused", "design", "checkpoint", "10", "0.5", "1", "2", "p", spec}, "\t") + "\n"
	if err := os.WriteFile(filepath.Join(st.Root, "index.tsv"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	want := st.Key(file, spec)
	if want == oldKey {
		t.Fatal("the keys of format 1 and 2 are the same: the test proves nothing")
	}
	found, err := st.Find("s1")
	if err != nil || found.Key != want || found.File != file || found.Spec != spec {
		t.Errorf("found %+v %v; want key %s", found, err, want)
	}
	list, err := st.List()
	if err != nil || len(list) != 1 || list[0].Key != want || list[0].File != file || list[0].Status != "paused" || list[0].Tokens != 10 {
		t.Errorf("listed %+v %v; want key %s", list, err, want)
	}
	// Its next line is of this format.
	x, err := st.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.WriteIndex(Summary{ID: "s1", Key: x.Meta.Key, File: x.Meta.File, Spec: x.Meta.Spec, Status: "completed"}); err != nil {
		t.Fatal(err)
	}
	content, _ := os.ReadFile(filepath.Join(st.Root, "index.tsv"))
	last := strings.Split(strings.TrimSuffix(string(content), "\n"), "\n")[1]
	if fields := strings.Split(last, "\t"); len(fields) != indexFields || fields[1] != want || fields[10] != "spec.md" || fields[11] != "phases.yaml" {
		t.Errorf("the new line: %q", last)
	}
}

// A state folder apart from the project (--state-dir elsewhere) names the
// project's files with ../ from the folder that holds it; a project
// reached through a symbolic link has the key of its real path.
func TestPathsOutsideTheBaseAndThroughLinks(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "work", "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := Open(filepath.Join(root, "state", ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	file := filepath.Join(project, "phases.yaml")
	if rel := st.Rel(file); rel != "../work/project/phases.yaml" {
		t.Errorf("Rel %q", rel)
	}
	if abs := st.Abs(st.Rel(file)); abs != file {
		t.Errorf("Abs(Rel) %q, want %q", abs, file)
	}
	if st.Rel("") != "" || st.Abs("") != "" {
		t.Error("an empty path (no spec) is not kept empty")
	}
	if abs := st.Abs("/old/checkout/phases.yaml"); abs != "/old/checkout/phases.yaml" {
		t.Errorf("an absolute path of format 1: %q", abs)
	}

	link := filepath.Join(root, "link")
	if err := os.Symlink(project, link); err != nil {
		t.Fatal(err)
	}
	linked, err := Open(filepath.Join(link, ".pipeline"))
	if err != nil {
		t.Fatal(err)
	}
	defer linked.Close()
	if rel := linked.Rel(file); rel != "phases.yaml" {
		t.Errorf("the real path of a file under a linked base: %q", rel)
	}
	if linked.Key(file, "") != linked.Key(filepath.Join(link, "phases.yaml"), "") {
		t.Error("the same phases.yaml by its link and by its real path has two keys")
	}
}
