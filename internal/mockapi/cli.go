package mockapi

import (
	"os"
	"path/filepath"
	"testing"
)

// AgentCLI returns the path of the real agent CLI name (claude, gemini,
// codex) and the folder of the CLIs, from PIPELINE_AGENT_CLIS, which make
// test sets after installing them. Without it the test fails: the
// adapters' tests are not to be skipped.
func AgentCLI(t testing.TB, name string) (path, dir string) {
	t.Helper()
	dir = os.Getenv("PIPELINE_AGENT_CLIS")
	if dir == "" {
		t.Fatal("PIPELINE_AGENT_CLIS is not set: run make test: it installs the agent CLIs")
	}
	path = filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no %s CLI in PIPELINE_AGENT_CLIS (%v): run make test: it installs the agent CLIs", name, err)
	}
	return path, dir
}
