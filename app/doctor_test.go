package app

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/sandbox"
)

func TestDoctor(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	// The hub's server is found as tai hub finds it: TAI_NATS_SERVER in
	// the command's environment.
	server := filepath.Join(t.TempDir(), "my-nats")
	if err := os.WriteFile(server, []byte("#!/bin/sh\necho 'nats-server: v9.9.9'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	std := IO{LookupEnv: func(k string) (string, bool) {
		if k == "TAI_NATS_SERVER" {
			return server, true
		}
		return os.LookupEnv(k)
	}}
	t.Setenv("TAI_NATS_TOKEN", "tok-for-the-doctor")
	d := RunDoctor(context.Background(), std, t.TempDir())
	if !slices.Contains(d.EnvDropped, "TAI_NATS_TOKEN") {
		t.Errorf("agent_env_dropped %q lacks TAI_NATS_TOKEN", d.EnvDropped)
	}
	if d.Hub.Server != server || d.Hub.Version != "nats-server: v9.9.9" {
		t.Errorf("hub %+v, want %s", d.Hub, server)
	}
	if len(d.Drivers) != len(runner.Drivers()) {
		t.Errorf("drivers %+v", d.Drivers)
	}
	var builtin bool
	for _, a := range d.Agents {
		if a.Name == "builtin" {
			builtin = a.Installed && a.Version != ""
		}
	}
	if !builtin {
		t.Errorf("the built-in agent is not reported working: %+v", d.Agents)
	}
	if d.Worktrees != nil {
		t.Errorf("worktrees outside a repository: %+v", d.Worktrees)
	}
	// Landlock: an ABI, or the kernel's reason for none; the launcher
	// this build has.
	if (d.Landlock.ABI > 0) == (d.Landlock.Error != "") {
		t.Errorf("landlock %+v", d.Landlock)
	}
	if d.Landlock.Scopes != (d.Landlock.ABI >= sandbox.ScopesABI) {
		t.Errorf("landlock scopes %v with ABI %d", d.Landlock.Scopes, d.Landlock.ABI)
	}
	if want := map[bool]string{true: "native", false: "go"}[sandbox.Native]; d.Landlock.Launcher != want {
		t.Errorf("launcher %q, want %q", d.Landlock.Launcher, want)
	}
	// Limits: the default pids limit in force, or why not; processes
	// hidden, or why not.
	if (d.Limits.Pids == sandbox.DefaultPids) == (d.Limits.Reason != "" && strings.Contains(d.Limits.Reason, "pids")) ||
		d.Limits.ProcessesHidden == (d.Limits.ProcessesReason != "") {
		t.Errorf("limits %+v", d.Limits)
	}
	if _, err := landlockABI(); err != nil && !errors.Is(err, syscall.ENOSYS) && !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("landlock: %v", err)
	}
	// The hub's server: found (with its version), or why not.
	if d.Hub.Server == "" && d.Hub.Error == "" || d.Hub.Server != "" && d.Hub.Version == "" && d.Hub.Error == "" {
		t.Errorf("hub %+v", d.Hub)
	}
	for _, dir := range d.Dirs {
		if !dir.Writable {
			t.Errorf("%s %s not writable", dir.What, dir.Path)
		}
	}
}

// In a repository, tai's worktrees are listed, and nothing is changed.
func TestDoctorWorktreesReadOnly(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.email=t@e", "-c", "user.name=T", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, a...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", a, err, out)
		}
	}
	before, _ := os.ReadDir(filepath.Join(repo, ".git"))
	w := doctorWorktrees(context.Background(), repo)
	if w == nil || w.Error != "" || w.Total != 0 || len(w.Stale) != 0 {
		t.Fatalf("worktrees %+v", w)
	}
	after, _ := os.ReadDir(filepath.Join(repo, ".git"))
	if len(after) != len(before) {
		t.Errorf("doctor changed .git: %d entries, then %d", len(before), len(after))
	}
}

func TestLimitsLine(t *testing.T) {
	for _, tc := range []struct {
		ls   sandbox.LimitStatus
		want string
	}{
		{sandbox.LimitStatus{Pids: 4096, Memory: 4 << 30, Via: "cgroup2"}, "pids 4096, memory 4GiB (cgroup2)"},
		{sandbox.LimitStatus{Pids: 4096, Via: "cgroup2", Reason: "memory: EBUSY"}, "pids 4096, memory none (cgroup2); not in force: memory: EBUSY"},
		{sandbox.LimitStatus{}, "pids none, memory none"},
	} {
		if got := limitsLine(tc.ls); got != tc.want {
			t.Errorf("limitsLine(%+v) = %q, want %q", tc.ls, got, tc.want)
		}
	}
}

func TestAgentConfinement(t *testing.T) {
	tests := []struct {
		agent    string
		landlock bool
		want     string
	}{
		{"codex", true, "tai's sandbox; its own (bubblewrap) cannot start under it, --sandbox off keeps its own"},
		{"codex", false, "its own (bubblewrap): no Landlock here"},
		{"builtin", true, "tai's sandbox"},
		{"builtin", false, "none: no Landlock here"},
	}
	for _, tt := range tests {
		if got := agentConfinement(tt.agent, tt.landlock); got != tt.want {
			t.Errorf("agentConfinement(%s, %v) = %q, want %q", tt.agent, tt.landlock, got, tt.want)
		}
	}
}
