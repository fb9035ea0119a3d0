package app

import (
	"context"
	"strings"
	"testing"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/exitcode"
)

// One command line is resolved once: tai run (on a terminal with no
// prompt, where it becomes a chat; with a prompt), tai chat and tai acp
// each read the config and find the agent one time, however many parts
// (the chat decision, the chat, the build, acp's check) use them.
func TestRunResolvesOnce(t *testing.T) {
	tests := []struct {
		name string
		tty  bool
		args []string
		cmd  func(context.Context, RunOptions, []string) error
	}{
		{"run on a terminal, no prompt (a chat)", true, nil, Run},
		{"run with a prompt", true, []string{"hi"}, Run},
		{"run from a pipe", false, []string{"hi"}, Run},
		{"chat", true, nil, Chat},
		{"acp", false, nil, func(ctx context.Context, o RunOptions, _ []string) error { return ACP(ctx, o) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			std, _, errb := testIO(map[string]string{"XDG_STATE_HOME": t.TempDir(), "XDG_CONFIG_HOME": t.TempDir(), "HOME": t.TempDir()})
			std.IsTerminal = func(any) bool { return tt.tty }
			loads, finds := 0, 0
			o := RunOptions{IO: std,
				// A bad --pty-size fails the run once all is resolved and
				// before any agent starts; no feed, so no socket.
				Flags: RunFlags{Agent: "builtin", Cwd: t.TempDir(), PTYSize: "bad", Sandbox: "off" /* no agent starts: nothing to confine */, Feed: FeedFlags{NoFeed: true, NoNotify: true}},
				LoadConfig: func(ws string) (config.Config, error) {
					loads++
					return config.Config{}, nil
				},
				FindAgent: func(a agentspec.Agent) (agentspec.ResolvedAgent, error) {
					finds++
					return agentspec.ResolveAgent(a)
				},
			}
			err := tt.cmd(context.Background(), o, tt.args)
			if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "--pty-size") {
				t.Fatalf("err = %v (stderr %q), want the --pty-size usage error", err, errb)
			}
			if loads != 1 || finds != 1 {
				t.Errorf("config read %d times, agent found %d times; want once each", loads, finds)
			}
		})
	}
}
