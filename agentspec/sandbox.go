package agentspec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/preset"
	"github.com/tai-dev/tai/sandbox"
)

// secretPaths are unreadable in the sandbox whatever the policy says:
// keys and tokens an agent has no business reading.
var secretPaths = []string{"~/.ssh", "~/.aws", "~/.config/gh", "~/.npmrc", "~/.netrc", "~/.docker/config.json",
	"~/.kube", "~/.gnupg", "~/.git-credentials", "~/.config/gcloud", "~/.azure"}

// sandboxConfig is what the agent's sandbox allows: the preset's state
// directories, the private cache tree and the policy's write roots
// writable; the secret paths and the policy's concrete deny-read paths
// hidden; tai's own policy (pol's file and policyFile, as given), state and
// audit log, and the agent's config files that name commands, read-only.
func sandboxConfig(sb Sandbox, p preset.Preset, pol policy.Config, policyFile string, env []string) (*sandbox.Config, error) {
	mode, err := sandbox.ParseMode(sb.Mode)
	if err != nil {
		return nil, err
	}
	if env == nil {
		env = os.Environ()
	}
	getenv := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	home, _ := os.UserHomeDir()
	cfg := &sandbox.Config{Mode: mode}
	confines := mode != sandbox.ModeOff && sandbox.ABI() > 0
	for _, sp := range p.StateDirs(home, getenv) {
		// Confined, the agent could not make them itself.
		switch {
		case sp.Dir && confines:
			_ = os.MkdirAll(sp.Path, 0o700)
		case sp.Make && confines:
			if f, err := os.OpenFile(sp.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
				_, _ = f.WriteString(sp.Init)
				f.Close()
			}
		}
		cfg.Write = append(cfg.Write, sp.Path)
	}
	// The user's caches are read-only: confined processes get their own,
	// through the environment the launcher gives them.
	if cache := preset.SandboxCache(home, getenv); cache != "" {
		if confines {
			_ = os.MkdirAll(cache, 0o700)
		}
		cfg.Write = append(cfg.Write, cache)
		cfg.Env = preset.CacheEnv(cache)
	}
	for _, s := range secretPaths {
		cfg.Deny = append(cfg.Deny, expandHome(s, home))
	}
	cfg.Deny = append(cfg.Deny, denyReadPaths(pol.Rules, home)...)
	cfg.Deny = append(cfg.Deny, feed.SecretDirs()...) // the feeds' secret: the human's
	cfg.Deny = append(cfg.Deny, statedir.Secrets())   // the hub's token
	cfg.Protect = append(cfg.Protect, statedir.Dir())
	if dp, err := policy.DefaultPath(); err == nil {
		cfg.Protect = append(cfg.Protect, filepath.Dir(dp))
	}
	for _, pp := range []string{pol.Path, policyFile} {
		if pp != "" {
			if a, err := filepath.Abs(pp); err == nil {
				cfg.Protect = append(cfg.Protect, a)
			}
		}
	}
	cfg.Protect = append(cfg.Protect, sb.Protect...)
	// The write roots come last: one at or under a secret or one of tai's
	// own paths would open it (the deepest grant decides), so the floor's
	// paths win and the root is refused, for the record.
	for _, w := range pol.WriteRoots {
		if w = expandHome(w, home); !filepath.IsAbs(w) {
			continue
		}
		if why := protectedRoot(w, cfg.Deny, cfg.Protect); why != "" {
			cfg.WriteRefused = append(cfg.WriteRefused, sandbox.Refusal{Path: w, Reason: why})
			continue
		}
		if confines {
			_ = os.MkdirAll(w, 0o700) // Landlock grants only what is there
		}
		cfg.Write = append(cfg.Write, w)
		cfg.WriteRoots = append(cfg.WriteRoots, w)
	}
	// Readable (the agent needs its config), never rewritten: the user's
	// next run of the agent without tai would run what it names. Bound
	// read-only where processes are hidden (the sandbox makes the missing
	// ones then); Landlock keeps those it can elsewhere, Claude Code's.
	for _, c := range p.ConfigFiles(home, getenv) {
		cfg.ReadOnly = append(cfg.ReadOnly, sandbox.ReadOnlyFile{Path: c.Path, Dir: c.Dir, Make: c.Make, Init: c.Init})
		if !c.Landlock {
			continue
		}
		if c.Dir && confines {
			_ = os.MkdirAll(c.Path, 0o700) // the agent makes it at start, and could not
		}
		cfg.Protect = append(cfg.Protect, c.Path)
	}
	if len(sb.NetAllow) > 0 {
		cfg.NetAllow = append(sandbox.EndpointsFromEnv(env), sb.NetAllow...)
	}
	cfg.Limits = pol.Limits.Resolve()
	cfg.HideProcesses = true
	return cfg, nil
}

// protectedRoot says why the write root w may not be one: it is at or
// under a secret path (deny) or one of tai's own (protect); "" if it may.
func protectedRoot(w string, deny, protect []string) string {
	w = filepath.Clean(w)
	for _, l := range []struct {
		paths []string
		what  string
	}{{deny, "a secret path"}, {protect, "tai's own files (policy, config, state, audit logs)"}} {
		for _, p := range l.paths {
			if p = filepath.Clean(p); w == p || strings.HasPrefix(w, p+"/") {
				return fmt.Sprintf("%s is under %s, %s: the floor's paths stay closed", w, p, l.what)
			}
		}
	}
	return ""
}

// writeRoots are the write roots as absolute, clean paths: ~/ and $HOME/
// the home directory, a relative one under the workspace cwd (as the
// policy reads them).
func writeRoots(roots []string, cwd string) ([]string, error) {
	home, _ := os.UserHomeDir()
	var out []string
	for _, w := range roots {
		if strings.TrimSpace(w) == "" {
			return nil, errors.New("a write root is empty")
		}
		for _, pre := range []string{"$HOME/", "${HOME}/"} {
			if rest, ok := strings.CutPrefix(w, pre); ok {
				w = "~/" + rest
			}
		}
		if w == "~" || w == "$HOME" || w == "${HOME}" {
			w = home
		}
		w = expandHome(w, home)
		if !filepath.IsAbs(w) {
			if cwd == "" {
				return nil, fmt.Errorf("write root %q is relative and no workspace is known", w)
			}
			abs, err := filepath.Abs(cwd)
			if err != nil {
				return nil, fmt.Errorf("write root %q: %w", w, err)
			}
			w = filepath.Join(abs, w)
		}
		if w = filepath.Clean(w); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out, nil
}

func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	return p
}

// denyReadPaths are the policy's deny rules for reads whose paths are
// concrete places outside any workspace (~/x, /x, x/** of those): the
// sandbox hides them too. Globs that match anywhere (**/.env) cannot be
// spelled as Landlock rules and stay the policy's.
func denyReadPaths(rules []policy.Rule, home string) []string {
	var out []string
	for _, r := range rules {
		if r.Effect != policy.EffectDeny || len(r.Commands)+len(r.Tools)+len(r.URLs)+len(r.Modes) > 0 {
			continue
		}
		if len(r.Kinds) > 0 && !contains(r.Kinds, string(driver.KindRead)) {
			continue
		}
		for _, p := range r.Paths {
			p = strings.TrimSuffix(strings.TrimSuffix(p, "/**"), "/*")
			p = expandHome(p, home)
			if filepath.IsAbs(p) && !strings.ContainsAny(p, "*?[{") {
				out = append(out, filepath.Clean(p))
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CommandSandbox is the sandbox of a command tai runs on an agent's work
// outside any agent's session (a plan's check): an agent's, with dir its
// one workspace root, the caches every agent's runtime writes, and no
// preset's own state directories.
func CommandSandbox(sb Sandbox, dir string, env []string) (*sandbox.Config, error) {
	cfg, err := sandboxConfig(sb, preset.Preset{}, policy.Config{}, "", env)
	if err != nil {
		return nil, err
	}
	cfg.Write = append([]string{dir}, cfg.Write...)
	return cfg, nil
}
