package main

// The token account of resume contexts and compaction (-context): what a
// resume costs in tokens against the history it stands for, on the
// offline quickstart and on a long Claude Code session (the real CLI
// against the Anthropic mock, which reports the size of each request it
// is sent as its input tokens, so the context grows turn by turn as a
// vendor's would).

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/pipeline-dev/pipeline/internal/mockapi"
)

var (
	contextOnly  = flag.Bool("context", false, "measure only the token account: resume contexts and compaction, on the quickstart and on a long Claude Code session (needs the claude CLI: PIPELINE_AGENT_CLIS or .cache/npm)")
	contextTurns = flag.Int("context-turns", 30, "phases (turns) of the long Claude session")
)

// contextAccount is the part of status -o json the figures read.
type contextAccount struct {
	Context struct {
		Compactions    int     `json:"compactions"`
		Sent           int     `json:"contexts_sent"`
		SentTokens     int     `json:"context_tokens"`
		ReplacedTokens int     `json:"replaced_tokens"`
		SavedPercent   float64 `json:"saved_percent"`
	} `json:"context"`
	Status string `json:"status"`
	Tokens int    `json:"tokens"`
}

func contextFigures(pipeline, work string) {
	fmt.Printf("pipeline bench -context: %s, files in %s\n\n", pipeline, work)
	quickstartContext(pipeline, work)
	longClaudeContext(pipeline, work)
}

func statusAccount(pipeline, dir string, env []string) contextAccount {
	cmd := exec.Command(pipeline, "status", "-o", "json")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	check(err)
	var a contextAccount
	check(json.Unmarshal(out, &a))
	return a
}

// quickstartContext runs the quickstart as make run does: to its
// checkpoint, then resumed with a note.
func quickstartContext(pipeline, work string) {
	dir := filepath.Join(work, "quickstart")
	check(os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot(), "examples", "quickstart"))))
	check(os.Chmod(filepath.Join(dir, "scripted-agent.sh"), 0o755))
	run := func(args ...string) {
		cmd := exec.Command(pipeline, args...)
		cmd.Dir = dir
		cmd.Run() // exit 3 at the checkpoint is the point
	}
	run("run", "-q")
	run("resume", "-q", "--notes", "the design is fine; go on")
	a := statusAccount(pipeline, dir, os.Environ())
	c := a.Context
	fmt.Printf("1. quickstart (%s, %d tokens in all): %d resume context(s), %d tokens sent in place of %d tokens of history: %.1f %% saved\n",
		a.Status, a.Tokens, c.Sent, c.SentTokens, c.ReplacedTokens, c.SavedPercent)
	fmt.Println("   (a command agent keeps no conversation: each resume context stands for every token of the session so far)")
}

// longClaudeContext runs a long conversation of one native Claude Code
// session, compacted when its context passes 60 000 tokens.
func longClaudeContext(pipeline, work string) {
	clis := os.Getenv("PIPELINE_AGENT_CLIS")
	if clis == "" {
		clis = filepath.Join(repoRoot(), ".cache", "npm", "node_modules", ".bin")
	}
	if _, err := os.Stat(filepath.Join(clis, "claude")); err != nil {
		fmt.Printf("2. long Claude session: not measured, no claude CLI in %s (make test installs it)\n", clis)
		return
	}
	mock := mockapi.NewAnthropic()
	defer mock.Close()
	mock.SetUsageFromRequest(true)
	var (
		mu        sync.Mutex
		turn      int
		decisions []string
	)
	mock.SetReplyFunc(func(prompt string) string {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(strings.TrimSpace(prompt), "Pipeline is compacting") {
			answer, _ := json.Marshal(map[string]any{"summary": fmt.Sprintf("%d parts done", turn),
				"decisions": decisions, "open_tasks": []string{"finish the remaining parts"}, "pinned_facts": []string{"the store is SQLite"}})
			return string(answer)
		}
		turn++
		decision := fmt.Sprintf("part %d keeps its state in table part_%d", turn, turn)
		decisions = append(decisions, decision)
		var b strings.Builder
		fmt.Fprintf(&b, "[DECISION] %s\n[TODO] review part %d\n", decision, turn)
		if turn > 1 {
			fmt.Fprintf(&b, "[DONE] review part %d\n", turn-1)
		}
		for i := range 60 {
			fmt.Fprintf(&b, "Part %d, line %d: the handler reads the request, checks the input against the schema, writes the row and answers with the new id.\n", turn, i)
		}
		return b.String()
	})
	dir := filepath.Join(work, "long-claude")
	check(os.MkdirAll(filepath.Join(dir, "home"), 0o755))
	var yaml strings.Builder
	yaml.WriteString("version: 1\nagent: {kind: claude, feature: long}\ndefaults:\n  compact_when: context_tokens > 60000\nphases:\n")
	for i := 1; i <= *contextTurns; i++ {
		fmt.Fprintf(&yaml, "  - name: part%d\n    prompt: Build part %d of the service.\n", i, i)
	}
	check(os.WriteFile(filepath.Join(dir, "phases.yaml"), []byte(yaml.String()), 0o644))
	env := []string{"CI=true", "HOME=" + filepath.Join(dir, "home"), "PATH=" + clis + string(os.PathListSeparator) + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + mock.URL, "ANTHROPIC_API_KEY=test", "DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_MAX_RETRIES=0"}
	cmd := exec.Command(pipeline, "run", "-q")
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Printf("2. long Claude session: the run failed (%v):\n%s\n", err, out)
		return
	}
	a := statusAccount(pipeline, dir, env)
	c := a.Context
	// The history proper: what the turns sent beyond the first turn's
	// request, which a fresh session sends again (system prompt, tools).
	overhead := 0
	for _, r := range mock.Turns() {
		overhead = max(1, len(r.Body)/4)
		break
	}
	net := c.ReplacedTokens - c.Compactions*overhead
	fmt.Printf("2. long Claude Code session (%d turns, %d tokens in all, %d compaction(s)): %d resume context(s), %d tokens sent in place of %d tokens of context: %.1f %% saved\n",
		*contextTurns, a.Tokens, c.Compactions, c.Sent, c.SentTokens, c.ReplacedTokens, c.SavedPercent)
	if net > 0 {
		fmt.Printf("   without the %d tokens a fresh session sends again anyway (Claude Code's system prompt and tools, the first turn's request): %d in place of %d: %.1f %% saved\n",
			overhead, c.SentTokens, net, 100*float64(net-c.SentTokens)/float64(net))
	}
	fmt.Println("   (the context: the input tokens Claude Code reported for its last turn, which the mock counts as a token per four bytes of the request; the resume context: counted by pipeline's tokenizer)")
}

// repoRoot is the folder of go.mod above the working folder.
func repoRoot() string {
	dir, err := os.Getwd()
	check(err)
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return dir
}
