package agentspec

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// loadPolicy is the policy in force: the policy file (Policy.File, else
// the user's default one where UserFile asks for it), then the flags. It
// returns the non-interactive behaviour in force too.
func loadPolicy(p Policy) (policy.Config, policy.NonInteractive, error) {
	var cfg policy.Config
	path := p.File
	if path == "" && p.UserFile {
		if dp, err := policy.DefaultPath(); err == nil {
			if _, err := os.Stat(dp); err == nil {
				path = dp
			}
		}
	}
	if path != "" {
		var err error
		if cfg, err = policy.Load(path); err != nil {
			return cfg, "", fmt.Errorf("--policy: %w", err)
		}
	}
	if p.Approve != "" {
		if _, err := policy.ParseMode(p.Approve); err != nil {
			return cfg, "", fmt.Errorf("--approve: %w", err)
		}
	}
	cfg, err := cfg.WithFlags(policy.Flags{Approve: p.Approve, Allow: p.Allow, Ask: p.Ask, Deny: p.Deny})
	if err != nil {
		return cfg, "", err
	}
	if p.Remember != "" {
		sc, err := policy.ParseScope(p.Remember)
		if err != nil {
			return cfg, "", fmt.Errorf("--remember: %w", err)
		}
		cfg.Remember = sc
	}
	ni := cfg.NonInteractive
	if p.NonInteractive != "" {
		if ni, err = policy.ParseNonInteractive(p.NonInteractive); err != nil {
			return cfg, "", fmt.Errorf("--non-interactive: %w", err)
		}
	}
	return cfg, ni, nil
}

// newEngine builds the policy engine for the workspace: the remember
// scope's memory (or the shared one), the prompters, the workspace roots
// and the files tai keeps from the agent.
func newEngine(s Spec, cfg policy.Config, ni policy.NonInteractive, modes driver.ModeRule) (*policy.Engine, error) {
	p := s.Policy
	mem := p.Memory
	if mem == nil {
		switch cfg.Remember {
		case policy.ScopeRun:
			mem = policy.NewMemory(policy.ScopeRun)
		case policy.ScopeWorkspace:
			var err error
			if mem, err = policy.OpenWorkspaceMemory(s.Cwd); err != nil {
				return nil, fmt.Errorf("policy memory: %w", err)
			}
		}
	}
	var protected []string
	for _, f := range p.Protected {
		if abs, err := filepath.Abs(f); err == nil {
			protected = append(protected, abs)
		}
	}
	return policy.NewEngine(cfg, policy.Options{Workspace: s.Cwd, Prompter: p.Prompter, Answerer: p.Answerer, NonInteractive: ni,
		Memory: mem, Asker: p.Asker, Protected: protected, Roots: s.AddDirs, ModeRule: modes})
}
