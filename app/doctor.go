package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pipeline-dev/pipeline/engine/spec"
	"github.com/pipeline-dev/pipeline/steps"
)

// DoctorResponse is what pipeline doctor found of a pipeline's agent
// CLIs: each checked once, in the order the phases first use them.
type DoctorResponse struct {
	OK     bool             `json:"ok"`
	Agents []steps.CLICheck `json:"agents"`
	// Plan is the pipeline's plan, for the checks a surface adds.
	Plan *spec.Plan `json:"-"`
}

// Doctor checks that the agent CLIs the pipeline uses are installed,
// recent enough and have credentials (named, never shown).
func Doctor(ctx context.Context, p Pipeline) (*DoctorResponse, error) {
	plan, err := spec.Load(p.file(), p.Spec)
	if err != nil {
		return nil, err
	}
	checks := AgentChecks(ctx, plan)
	out := redacted(environmentRedactor(), DoctorResponse{OK: ChecksOK(checks), Agents: checks})
	out.Plan = plan
	return &out, nil
}

// AgentChecks checks each agent CLI the plan's steps use, once, in the
// order the phases first use them.
func AgentChecks(ctx context.Context, plan *spec.Plan) []steps.CLICheck {
	checks := []steps.CLICheck{}
	seen := map[string]int{}
	for _, phase := range plan.Phases {
		for _, step := range phase.Steps {
			if step.Agent == nil {
				continue
			}
			agent := step.Agent.Value
			key := agent.Kind
			if agent.Kind == spec.KindCommand && len(agent.Command) > 0 {
				key += ":" + agent.Command[0]
			}
			if i, ok := seen[key]; ok {
				// Another step's env may hold the key.
				checks[i].Credentials = mergeNames(checks[i].Credentials, agentCredentials(checks[i].CLI, agent.Env))
				continue
			}
			seen[key] = len(checks)
			if cli, ok := steps.CLIFor(agent.Kind); ok {
				checks = append(checks, steps.CheckCLI(ctx, cli, agent.Env))
			} else {
				checks = append(checks, checkCommand(filepath.Dir(plan.File), agent.Command))
			}
		}
	}
	return checks
}

func agentCredentials(cli steps.CLI, env map[string]string) []string {
	var names []string
	for _, name := range cli.KeyVars {
		if env[name] != "" {
			names = append(names, name)
		}
	}
	return names
}

func mergeNames(a, b []string) []string {
	for _, n := range b {
		if !slices.Contains(a, n) {
			a = append(a, n)
		}
	}
	return a
}

// checkCommand looks for a kind: command agent's program: on PATH, or
// relative to the folder of phases.yaml, where steps run.
func checkCommand(dir string, command []string) steps.CLICheck {
	c := steps.CLICheck{CLI: steps.CLI{Kind: spec.KindCommand}, Credentials: []string{}, Status: steps.CheckOK}
	if len(command) == 0 {
		return c
	}
	c.Program = command[0]
	path := command[0]
	if strings.Contains(path, "/") {
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			c.Status, c.Problem = steps.CheckMissing, fmt.Sprintf("%s is not an executable file", path)
			return c
		}
		c.Path = path
		return c
	}
	found, err := exec.LookPath(path)
	if err != nil {
		c.Status = steps.CheckMissing
		c.Problem = fmt.Sprintf("%q was not found on PATH (PATH=%s)", path, os.Getenv("PATH"))
		c.Hint = "install it, or put the folder that holds it on PATH"
		return c
	}
	c.Path = found
	return c
}

// ChecksOK tells whether every CLI checked can run.
func ChecksOK(checks []steps.CLICheck) bool {
	for _, c := range checks {
		if !c.OK() {
			return false
		}
	}
	return true
}
