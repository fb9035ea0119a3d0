// Command tai orchestrates AI coding agents. This file is cobra wiring
// only: the commands, their flags and what they do live in package app.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/app"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/sandbox"
)

func main() {
	if sandbox.Launching() {
		// tai re-executed as the launcher of an agent: no flags, no cobra.
		os.Exit(sandbox.Main())
	}
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A closed stdout is an EPIPE the command handles (app's closedOut),
	// not a SIGPIPE that kills tai mid-turn. Notified, not ignored: an
	// ignored signal would stay ignored in the agents tai starts.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	std := app.System()
	root := newRoot(std)
	root.SetArgs(capSpeakArgs(os.Args[1:]))
	return app.Report(std.Err, execute(ctx, root))
}

// execute runs the command line. What cobra itself refused before any
// command ran (an unknown command, a bad argument count) is a usage error;
// a command's own error keeps its code.
func execute(ctx context.Context, root *cobra.Command) error {
	err := root.ExecuteContext(ctx)
	var r ran
	if err == nil || errors.As(err, &r) {
		return err
	}
	var e *exitcode.Error
	if errors.As(err, &e) {
		return err
	}
	return exitcode.With(exitcode.Usage, err)
}

// ran marks an error a command returned.
type ran struct{ error }

func (r ran) Unwrap() error { return r.error }

// markRan wraps every command's RunE under c so that its errors are marked.
func markRan(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := run(cmd, args); err != nil {
				return ran{err}
			}
			return nil
		}
	}
	for _, s := range c.Commands() {
		markRan(s)
	}
}

// capSpeakArgs spells `tai --cap-speak FORMAT [run flags] [PROMPT]` as the
// run it is: tai as an agent, its parent's conversation on stdin and its
// frames on stdout.
func capSpeakArgs(args []string) []string {
	if len(args) == 0 {
		return args
	}
	format, ok := strings.CutPrefix(args[0], "--cap-speak=")
	rest := args[1:]
	if !ok {
		if args[0] != "--cap-speak" || len(args) < 2 {
			return args
		}
		format, rest = args[1], args[2:]
	}
	return append([]string{"run", "--input-format", format, "--output", format}, rest...)
}

// newRoot is the command tree, from app's per-command constructors.
func newRoot(std app.IO) *cobra.Command {
	var manifest bool
	var speak string
	g := &app.Globals{}
	root := &cobra.Command{
		Use:   "tai",
		Short: "tai orchestrates AI coding agents (ACP, PTY, stream-json, A2A)",
		Long: "tai drives coding agents (Claude Code, Codex, Gemini CLI, Qwen Code, OpenCode, Copilot, ...)\n" +
			"through one policy engine, workspace-confined host services and exact exit codes.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       app.ReadBuildInfo().String(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if manifest {
				return app.PrintManifest(std.Out)
			}
			if speak != "" {
				return exitcode.Usagef("--cap-speak comes first: tai --cap-speak stream-json [run flags] [PROMPT]")
			}
			return cmd.Help()
		},
	}
	root.Flags().BoolVar(&manifest, "cap-manifest", false, "print this build's capability manifest as JSON")
	root.Flags().StringVar(&speak, "cap-speak", "", "be an agent that speaks this protocol (stream-json) on stdin/stdout; run flags follow")
	// -v is --verbose on every command, also before the command's name
	// (tai -v run …); the version is --version or tai version.
	root.PersistentFlags().BoolVarP(&g.Verbose, "verbose", "v", false, "log debug detail (and an agent's stderr) to stderr")
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(std.Out)
	root.SetErr(std.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.With(exitcode.Usage, err)
	})
	root.AddCommand(app.NewCmdRun(std, g, nil), app.NewCmdChat(std, g, nil), app.NewCmdACP(std, g, nil), app.NewCmdAgents(std),
		app.NewCmdAgent(std), app.NewCmdModel(std, g), app.NewCmdAudit(std, nil), app.NewCmdVersion(std))
	root.AddCommand(app.NewCmdHub(std, g, nil), app.NewCmdWorker(std, g, nil))
	root.AddCommand(app.NewCmdFleet(std, g), app.NewCmdWorktree(std), app.NewCmdSessions(std, nil), app.NewCmdConfig(std),
		app.NewCmdDoctor(std), app.NewCmdTop(std))
	markRan(root)
	return root
}
