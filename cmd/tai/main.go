// Command tai orchestrates AI coding agents. This file is cobra wiring
// only: the commands, their flags and what they do live in package app.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/app"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/secretenv"
	"github.com/tai-dev/tai/sandbox"
)

func main() {
	if sandbox.Launching() {
		// tai re-executed as the launcher of an agent: no flags, no cobra.
		os.Exit(sandbox.Main())
	}
	if len(secretenv.Dropped(os.Environ())) > 0 {
		_ = secretenv.HideProcess() // tai's secrets in its environment: no agent reads /proc/TAI/environ
	}
	os.Exit(run())
}

func run() int {
	stdoutClosed := app.StdoutClosed()
	ctx, notified := notifySignals()
	std := app.System(stdoutClosed)
	args := capSpeakArgs(os.Args[1:])
	root := newRoot(std, args)
	// No command runs before its signal handlers are in place.
	root.PersistentPreRun = func(*cobra.Command, []string) { <-notified }
	err := execute(ctx, root)
	if err != nil && !errors.As(err, new(ran)) {
		// Refused by cobra: -o json still promises its one document.
		app.CommandLineRefused(std, args, err)
	}
	return app.Report(std.Err, app.OutputChecked(std, err))
}

// notifySignals returns the context an interrupt or a SIGTERM cancels,
// and a channel closed once their handlers are in place. Notifying a
// signal is a round trip to the runtime's thread of signal masks, a thread
// wake-up or two each: they are made while the command line is built and
// parsed, and never undone (tai exits when run returns).
func notifySignals() (context.Context, <-chan struct{}) {
	ctx, cancel := context.WithCancelCause(context.Background())
	notified := make(chan struct{})
	go func() {
		sig, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		// A closed stdout is an EPIPE the command handles (app's
		// closedOut), not a SIGPIPE that kills tai mid-turn. Notified, not
		// ignored: an ignored signal would stay ignored in the agents tai
		// starts.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
		close(notified)
		<-sig.Done()
		cancel(context.Cause(sig))
	}()
	return ctx, notified
}

// execute runs the command line. What cobra itself refused before any
// command ran (an unknown command, a bad argument count) is a usage error;
// a command's own error keeps its code.
func execute(ctx context.Context, root *cobra.Command) error {
	c, err := root.ExecuteContextC(ctx)
	if word, ok := root.Annotations[unknownKey]; ok && err == nil {
		return unknownSubcommandError(c, word)
	}
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

// commands are tai's commands, by name. A command line builds only the
// one it runs: building every command's flags on each start cost ~55 page
// faults and 4% of a one-turn tai run's CPU.
var commands = []struct {
	name string
	new  func(app.IO, *app.Globals) *cobra.Command
}{
	{"run", func(std app.IO, g *app.Globals) *cobra.Command { return app.NewCmdRun(std, g, nil) }},
	{"chat", func(std app.IO, g *app.Globals) *cobra.Command { return app.NewCmdChat(std, g, nil) }},
	{"acp", func(std app.IO, g *app.Globals) *cobra.Command { return app.NewCmdACP(std, g, nil) }},
	{"agents", func(std app.IO, _ *app.Globals) *cobra.Command { return app.NewCmdAgents(std) }},
	{"agent", func(std app.IO, _ *app.Globals) *cobra.Command { return app.NewCmdAgent(std) }},
	{"model", app.NewCmdModel},
	{"audit", func(std app.IO, _ *app.Globals) *cobra.Command { return app.NewCmdAudit(std, nil) }},
	{"version", func(std app.IO, _ *app.Globals) *cobra.Command { return app.NewCmdVersion(std) }},
	{"hub", func(std app.IO, g *app.Globals) *cobra.Command { return app.NewCmdHub(std, g, nil) }},
	{"worker", func(std app.IO, g *app.Globals) *cobra.Command { return app.NewCmdWorker(std, g, nil) }},
	{"fleet", app.NewCmdFleet},
	{"compare", app.NewCmdCompare},
	{"worktree", func(std app.IO, _ *app.Globals) *cobra.Command { return app.NewCmdWorktree(std) }},
	{"sessions", func(std app.IO, _ *app.Globals) *cobra.Command { return app.NewCmdSessions(std, nil) }},
	{"config", func(std app.IO, _ *app.Globals) *cobra.Command { return app.NewCmdConfig(std) }},
	{"doctor", func(std app.IO, _ *app.Globals) *cobra.Command { return app.NewCmdDoctor(std) }},
	{"top", func(std app.IO, _ *app.Globals) *cobra.Command { return app.NewCmdTop(std) }},
	{"serve", app.NewCmdServe},
}

// newRoot is the command tree that runs args, from app's per-command
// constructors. The command args run is built whole; the others stay
// placeholders by name, never shown. What is not one command (the root's
// own help and flags, an unknown command and its suggestions, completing
// a command's name) builds them all.
func newRoot(std app.IO, args []string) *cobra.Command {
	g := &app.Globals{}
	root := newRootCmd(std, g)
	placeholders := make([]*cobra.Command, len(commands))
	for i, c := range commands {
		placeholders[i] = &cobra.Command{Use: c.name}
	}
	root.AddCommand(placeholders...)
	// cobra's own lookup, on the root's flags: the command it will run.
	// help and __complete name that command after them.
	find := args
	if len(find) > 0 && (find[0] == "help" || find[0] == cobra.ShellCompRequestCmd || find[0] == cobra.ShellCompNoDescRequestCmd) {
		find = find[1:]
	}
	target, _, err := root.Find(find)
	all := err != nil || !slices.Contains(placeholders, target)
	for i, p := range placeholders {
		if all || p == target {
			root.RemoveCommand(p)
			root.AddCommand(commands[i].new(std, g))
		}
	}
	// Nor is cobra's completion command (four commands with their help)
	// built for a line that runs another command, nor the root's
	// --version (it reads the binary's build info).
	root.CompletionOptions.DisableDefaultCmd = !all
	if all {
		root.Version = app.ReadBuildInfo().String()
	}
	markRan(root)
	root.SetArgs(args)
	return root
}

// newRootCmd is the root command alone, with its flags.
func newRootCmd(std app.IO, g *app.Globals) *cobra.Command {
	var manifest bool
	var speak string
	root := &cobra.Command{
		Use:   "tai",
		Short: "tai orchestrates AI coding agents (ACP, PTY, stream-json, A2A)",
		Long: "tai drives coding agents (Claude Code, Codex, Gemini CLI, Qwen Code, OpenCode, Copilot, ...)\n" +
			"through one policy engine, workspace-confined host services and exact exit codes.",
		SilenceUsage:  true,
		SilenceErrors: true,
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
	refuseUnknownSubcommand(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.With(exitcode.Usage, err)
	})
	return root
}

// unknownKey is the root's annotation that holds a refused subcommand word.
const unknownKey = "tai.unknown-subcommand"

// refuseUnknownSubcommand makes a group (tai fleet, tai audit) given a
// word that is none of its commands a usage error, as the root's unknown
// command is: cobra would print the group's help and exit 0, and a typo
// (tai fleet check plan.yaml) would look like success. cobra shows the
// help of a command that does not run, with the command line's args: the
// help function sees the word and leaves it for execute to refuse.
func refuseUnknownSubcommand(root *cobra.Command) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if word, ok := unknownSubcommand(c, args); ok {
			if root.Annotations == nil {
				root.Annotations = map[string]string{}
			}
			root.Annotations[unknownKey] = word
			return
		}
		help(c, args)
	})
}

// unknownSubcommand is the word after group c's path on its command line.
func unknownSubcommand(c *cobra.Command, args []string) (string, bool) {
	if !c.HasParent() || c.Runnable() || !c.HasSubCommands() {
		return "", false
	}
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	path := strings.Fields(c.CommandPath())[1:]
	if len(words) <= len(path) || !slices.Equal(words[:len(path)], path) {
		return "", false
	}
	return words[len(path)], true
}

// unknownSubcommandError is the usage error for the word group c was
// given.
func unknownSubcommandError(c *cobra.Command, word string) error {
	msg := fmt.Sprintf("unknown command %q for %q", word, c.CommandPath())
	if s := c.SuggestionsFor(word); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return exitcode.Usagef("%s; see %s --help", msg, c.CommandPath())
}
