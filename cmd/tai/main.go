// Command tai orchestrates AI coding agents. This file is cobra wiring
// only; what each command does lives in package app.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/app"
	"github.com/tai-dev/tai/audit"
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

// exitErr carries a command's exit code out of cobra.
type exitErr struct{ code int }

func (e exitErr) Error() string { return fmt.Sprintf("exit %d", e.code) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A closed stdout is an EPIPE the command handles (app's closedOut),
	// not a SIGPIPE that kills tai mid-turn. Notified, not ignored: an
	// ignored signal would stay ignored in the agents tai starts.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	std := app.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	root := newRoot(std)
	root.SetArgs(capSpeakArgs(os.Args[1:]))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	if e, ok := err.(exitErr); ok {
		return e.code
	}
	// What cobra itself refused (an unknown command, a bad argument
	// count) is a usage error.
	return app.Report(os.Stderr, exitcode.With(exitcode.Usage, err))
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

func code(c int) error {
	if c == 0 {
		return nil
	}
	return exitErr{c}
}

// globals are the flags every command takes.
type globals struct {
	verbose bool
}

func newRoot(std app.IO) *cobra.Command {
	var manifest bool
	var speak string
	g := &globals{}
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
				return code(app.PrintManifest(std.Out))
			}
			if speak != "" {
				return code(app.Report(std.Err, exitcode.Usagef("--cap-speak comes first: tai --cap-speak stream-json [run flags] [PROMPT]")))
			}
			return cmd.Help()
		},
	}
	root.Flags().BoolVar(&manifest, "cap-manifest", false, "print this build's capability manifest as JSON")
	root.Flags().StringVar(&speak, "cap-speak", "", "be an agent that speaks this protocol (stream-json) on stdin/stdout; run flags follow")
	// -v is --verbose on every command, also before the command's name
	// (tai -v run …); the version is --version or tai version.
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "log debug detail (and an agent's stderr) to stderr")
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(std.Out)
	root.SetErr(std.Err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return code(app.Report(std.Err, exitcode.With(exitcode.Usage, err)))
	})
	root.AddCommand(newRun(std, g, false), newRun(std, g, true), newACP(std, g), newAgents(std), newAgent(std), newModel(std, g), newAudit(std), newVersion(std))
	root.AddCommand(newHub(std, g), newWorker(std, g))
	root.AddCommand(newFleet(std, g), newWorktree(std), newSessions(std), newConfig(std), newDoctor(std), newTop(std))
	return root
}

// newRun is `tai run`, or with chat `tai chat`: the same flags.
func newRun(std app.IO, g *globals, chat bool) *cobra.Command {
	var f app.RunFlags
	c := &cobra.Command{
		Use:   "run [flags] PROMPT...",
		Short: "Run one prompt turn against an agent and stream it",
		Long: "Run one prompt turn against an agent. Without --agent, tai's built-in agent runs a scripted demo\n" +
			"of every feature, needing no model or API key. Use - as the prompt to read it from stdin.",
		Example: "  tai run \"show me what you can do\"\n" +
			"  tai run --agent qwen --approve all \"add a README\"\n" +
			"  tai run --agent-cmd 'npx -y @agentclientprotocol/claude-agent-acp' --output json \"fix the tests\"",
		RunE: func(cmd *cobra.Command, args []string) error {
			f.AgentCmdSet = cmd.Flags().Changed("agent-cmd")
			f.Changed = cmd.Flags().Changed
			f.Verbose = g.verbose
			if chat {
				return code(app.Chat(cmd.Context(), f, args, std))
			}
			return code(app.Run(cmd.Context(), f, args, std))
		},
	}
	if chat {
		c.Use, c.Short = "chat [flags] [FIRST PROMPT...]", "An interactive session: one turn per line, with history and Tab completion"
		c.Long = "An interactive, multi-turn session with an agent (also `tai run` with no prompt on a terminal). On a\n" +
			"terminal: a line editor with history (Up/Down), Tab completion of the agent's slash commands (with\n" +
			"their input hints) and of /mode and /model; Ctrl-C cancels the running turn, not the session; Ctrl-D\n" +
			"or /quit ends it. From a pipe: one prompt per line. Every turn is in one audit log and session record."
		c.Example = "  tai chat\n  tai chat --agent qwen --approve ask\n  printf 'first\\nsecond\\n' | tai chat --agent codex"
	}
	addRunFlags(c, &f)
	return c
}

// addRunFlags defines the run flags on c: tai run's, which tai acp takes
// too.
func addRunFlags(c *cobra.Command, f *app.RunFlags) {
	fl := c.Flags()
	fl.StringVarP(&f.Agent, "agent", "a", "builtin", "agent preset, see: tai agents")
	fl.StringVar(&f.AgentCmd, "agent-cmd", "", "launch this command instead of a preset (split like a shell, not run by one), or an A2A agent's URL")
	fl.StringVar(&f.Driver, "driver", "", "driver: acp | stream-json | pty | a2a (default: the preset's; a2a for an http(s) URL)")
	fl.StringVarP(&f.Cwd, "cwd", "C", "", "workspace directory (default: the current directory)")
	fl.StringVar(&f.Approve, "approve", "", "permission mode: all | reads | ask | deny | yolo (default: the policy file's, else reads)")
	fl.StringVar(&f.NonInteractive, "non-interactive", "", "what ask becomes with no terminal: deny | fail (default: the policy file's, else deny)")
	fl.StringVar(&f.Policy, "policy", "", "policy file, TOML (default: $XDG_CONFIG_HOME/tai/policy.toml if it exists)")
	fl.StringArrayVar(&f.Allow, "allow", nil, "allow rule KIND[,KIND][:PATTERN] or tool=NAME, e.g. 'execute:go test *' (repeatable)")
	fl.StringArrayVar(&f.Ask, "ask", nil, "ask rule, same syntax, e.g. 'execute:git push*' (repeatable)")
	fl.StringArrayVar(&f.Deny, "deny", nil, "deny rule, same syntax, e.g. 'edit:**/.env' (repeatable)")
	fl.StringVar(&f.Remember, "remember", "", "how far an 'always' answer reaches: session | run | workspace")
	fl.BoolVar(&f.AllowDenials, "allow-denials", false, "exit 0 even if a permission was denied")
	fl.StringVar(&f.Mode, "mode", "", "start the session in this mode")
	fl.StringVar(&f.Model, "model", "", "select this model (the agent's config option of category model)")
	fl.StringArrayVar(&f.Set, "set", nil, "set a config option, id=value (repeatable)")
	fl.StringVar(&f.Resume, "resume", "", "resume (or load) this session id instead of starting a new one")
	fl.StringVar(&f.Fork, "fork", "", "start a new session from a copy of this one (ACP session/fork)")
	fl.StringVar(&f.PTYSize, "pty-size", "", "the pty driver's screen, COLSxROWS (default 200x100: tall, so replies stay on screen)")
	fl.StringVar(&f.InputFormat, "input-format", "text", "text (the prompt is the arguments) | stream-json (user messages and control requests on stdin; needs -o stream-json)")
	fl.BoolVarP(&f.Continue, "continue", "c", false, "resume the last resumable session of this agent and driver in this workspace")
	fl.StringArrayVar(&f.AddDir, "add-dir", nil, "another workspace root besides --cwd: the agent is told (additionalDirectories) and tai serves it (repeatable)")
	fl.StringVar(&f.Auth, "auth", "", "authenticate with this method if the agent needs it")
	fl.StringArrayVar(&f.MCP, "mcp", nil, "MCP server for the agent: JSON object or array, or @file (repeatable)")
	fl.StringArrayVarP(&f.Files, "file", "f", nil, "attach a file to the prompt (repeatable)")
	fl.BoolVar(&f.EmbedFiles, "embed", false, "embed --file contents in the prompt instead of linking them")
	fl.DurationVar(&f.Timeout, "timeout", 0, "cancel the run after this long (exit 3)")
	fl.DurationVar(&f.CancelGrace, "cancel-grace", 0, "how long a cancelled agent gets before it is killed (default 3s)")
	fl.StringVarP(&f.Output, "output", "o", "text", "output: text | json | stream-json")
	fl.StringVar(&f.Trace, "trace", "", "write the raw wire transcript (secrets redacted) to this file")
	fl.Int64Var(&f.MaxLineBytes, "max-line-bytes", 256<<20, "largest protocol line accepted; longer ones are skipped")
	fl.Int64Var(&f.MaxMessageBytes, "max-message-bytes", 256<<20, "largest message text kept, over all its chunks; the rest is skipped and reported")
	fl.StringArrayVarP(&f.Env, "env", "e", nil, "extra environment for the agent, KEY=VALUE (repeatable)")
	fl.StringVar(&f.Audit, "audit", "", "write the audit log here (default: $XDG_STATE_HOME/tai/audit/RUN.jsonl)")
	fl.BoolVar(&f.NoAudit, "no-audit", false, "do not write an audit log")
	fl.StringVar(&f.Sandbox, "sandbox", "auto", "confine the agent with Landlock: auto (where the kernel can) | on (fail where it cannot) | off")
	fl.StringSliceVar(&f.NetAllow, "net-allow", nil, "turn the sandbox's network rule on: TCP only to these HOST:PORT (the port is what Landlock checks) and the model endpoint (repeatable, comma lists)")
	fl.StringVar(&f.Feed.Listen, "listen", "", "also serve the live feed on TCP at this address (e.g. 127.0.0.1:7777), behind a bearer token printed on stderr")
	fl.BoolVar(&f.Feed.NoFeed, "no-feed", false, "no live feed: tai top cannot watch or answer this run")
	fl.StringVar(&f.Feed.NotifyURL, "notify-url", "", "POST a JSON notice here when something starts waiting for you (coalesced)")
	fl.BoolVar(&f.Feed.NoNotify, "no-notify", false, "no bell, OSC 9 or notify-send when something starts waiting for you")
	fl.StringArrayVar(&f.Redact, "redact", nil, "also redact matches of this regexp in the audit log and trace; a (?P<secret>...) group limits it (repeatable)")
	_ = c.RegisterFlagCompletionFunc("agent", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return app.AgentNames(), cobra.ShellCompDirectiveNoFileComp
	})
	_ = c.RegisterFlagCompletionFunc("driver", cobra.FixedCompletions(app.DriverNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("resume", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		ws, _ := cmd.Flags().GetString("cwd")
		return app.SessionIDs(cmd.Context(), ws), cobra.ShellCompDirectiveNoFileComp
	})
	_ = c.RegisterFlagCompletionFunc("policy", tomlFiles)
	_ = c.RegisterFlagCompletionFunc("approve", cobra.FixedCompletions([]string{"all", "reads", "ask", "deny", "yolo"}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("sandbox", cobra.FixedCompletions([]string{"auto", "on", "off"}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json", "stream-json"}, cobra.ShellCompDirectiveNoFileComp))
}

func newAgents(std app.IO) *cobra.Command {
	var o outputFlag
	c := &cobra.Command{
		Use:   "agents",
		Short: "List the known agents and whether each is installed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.Agents(std.Out, o.asJSON()))
		},
	}
	o.add(c)
	return c
}

func newAgent(std app.IO) *cobra.Command {
	parent := &cobra.Command{Use: "agent", Short: "Run an agent that tai itself provides"}
	var script string
	var printScript bool
	var pageSize int
	b := &cobra.Command{
		Use:   "builtin",
		Short: "Run tai's built-in ACP agent on stdin/stdout (no model needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.BuiltinAgent(cmd.Context(), script, printScript, pageSize, std))
		},
	}
	b.Flags().StringVar(&script, "script", "", "play this script (YAML or JSON) instead of the default")
	b.Flags().BoolVar(&printScript, "print-script", false, "print the default script and exit")
	b.Flags().IntVar(&pageSize, "page-size", 0, "sessions per session/list page (default 20)")
	parent.AddCommand(b)
	return parent
}

func newVersion(std app.IO) *cobra.Command {
	var o outputFlag
	c := &cobra.Command{
		Use:   "version",
		Short: "Print tai's version: module version, commit, Go version, OS/arch",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.PrintVersion(std.Out, o.value()))
		},
	}
	o.add(c)
	return c
}

func newModel(std app.IO, g *globals) *cobra.Command {
	parent := &cobra.Command{Use: "model", Short: "A scripted model server for offline, deterministic agent runs"}
	var f app.ModelServeFlags
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve OpenAI, Anthropic and Gemini APIs from a script, printing the base URL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Verbose = g.verbose
			return code(app.ModelServe(cmd.Context(), f, std))
		},
	}
	serve.Flags().StringVar(&f.Script, "script", "", "script of turns (JSON or YAML)")
	serve.Flags().StringVar(&f.Addr, "addr", "127.0.0.1:0", "listen address (port 0 picks a free one)")
	serve.Flags().StringVar(&f.Log, "log", "", "append one JSON line per request to this file")
	serve.Flags().StringVar(&f.Cwd, "cwd", "", "value of {{CWD}} in the script (default: the current directory)")
	serve.Flags().StringVar(&f.PortFile, "url-file", "", "also write the base URL to this file (atomically)")
	parent.AddCommand(serve)
	return parent
}

func newAudit(std app.IO) *cobra.Command {
	parent := &cobra.Command{Use: "audit", Short: "Verify and read tai's hash-chained audit logs"}
	verify := &cobra.Command{
		Use:   "verify FILE|RUN_ID",
		Short: "Check a log's hash chain; name the first bad line (non-zero exit on failure)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.AuditVerify(args[0], std))
		},
	}
	var f audit.Filter
	var o outputFlag
	show := &cobra.Command{
		Use:   "show FILE|RUN_ID",
		Short: "Render a log readably, filtered by session, task and kind",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.AuditShow(args[0], f, o.asJSON(), std))
		},
	}
	show.Flags().StringVar(&f.Session, "session", "", "only this session (a prefix is enough)")
	show.Flags().StringVar(&f.Task, "task", "", "only this fleet task's sessions")
	show.Flags().StringSliceVar(&f.Kinds, "kind", nil, "only these kinds (permission matches permission.request and permission.decision)")
	o.add(show)
	verify.ValidArgsFunction, show.ValidArgsFunction = auditLogs, auditLogs
	_ = show.RegisterFlagCompletionFunc("session", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return app.SessionIDs(cmd.Context(), ""), cobra.ShellCompDirectiveNoFileComp
	})
	parent.AddCommand(verify, show)
	return parent
}

func newFleet(std app.IO, g *globals) *cobra.Command {
	parent := &cobra.Command{Use: "fleet", Short: "Run a plan of agent tasks in git worktrees, under one budget"}
	var f app.FleetFlags
	addRunFlags := func(c *cobra.Command) {
		fl := c.Flags()
		fl.IntVarP(&f.Concurrency, "concurrency", "j", 0, "tasks at a time (default: the plan's, else 4)")
		fl.BoolVar(&f.FailFast, "fail-fast", false, "stop every task once one fails (default: the plan's)")
		fl.StringVarP(&f.Output, "output", "o", "text", "output: text (live table on a terminal, progress lines when piped) | json (summary on stdout) | stream-json (every task's frames, fleet frames, a fleet result frame)")
		fl.StringVar(&f.JUnit, "junit", "", "write a JUnit XML report here")
		fl.DurationVar(&f.CancelGrace, "cancel-grace", 0, "how long a cancelled agent gets before it is killed (default 3s)")
		addNATSFlags(c, &f.NATS, "a NATS server with JetStream (nats://host:4222): tai worker processes there run the tasks")
		fl.StringVar(&f.Remote, "remote", "", "with --nats: the git remote workers clone and push to (default: this repository by path)")
		fl.DurationVar(&f.Lease, "lease", 0, "with --nats: how long a worker's claim lasts without a heartbeat (default 30s)")
		fl.StringVar(&f.Sandbox, "sandbox", "auto", "confine each task's agent with Landlock: auto (where the kernel has it) | on (fail without it) | off")
		fl.StringVar(&f.Feed.Listen, "listen", "", "also serve the live feed on TCP at this address, behind a bearer token printed on stderr")
		fl.BoolVar(&f.Feed.NoFeed, "no-feed", false, "no live feed: tai top cannot watch or answer this run")
		fl.StringVar(&f.Feed.NotifyURL, "notify-url", "", "POST a JSON notice here when something starts waiting for you (coalesced)")
		fl.BoolVar(&f.Feed.NoNotify, "no-notify", false, "no bell, OSC 9 or notify-send when something starts waiting for you")
	}
	run := &cobra.Command{
		Use:   "run [flags] PLAN.yaml",
		Short: "Run a plan's tasks, each in its own worktree, and merge the results back",
		Long: "Run a plan's tasks as a DAG, each with its agent in its own git worktree (branch tai/RUN/TASK),\n" +
			"at most --concurrency at a time, under the plan's budget. Finished branches are rebased and\n" +
			"fast-forwarded into the plan's target branch one at a time, never through your checkout.\n" +
			"Exit 0 if every task merged; 1 a task failed; 6 a budget ran out; 7 a merge conflict; 130 interrupted.",
		Example: "  tai fleet run plan.yaml\n  tai fleet run -j 8 --output json --junit fleet.xml plan.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Verbose = g.verbose
			return code(app.FleetRun(cmd.Context(), f, args[0], std))
		},
	}
	run.ValidArgsFunction = planFiles
	addRunFlags(run)
	run.Flags().StringVar(&f.RunID, "run-id", "", "name the run (default: fleet-DATE-TIME-RANDOM)")
	run.Flags().StringVarP(&f.Repo, "repo", "C", "", "repository (default: the plan file's directory)")
	run.Flags().BoolVar(&f.Submit, "submit", false, "with --nats: hand the run to the hub's coordinator (tai hub --coordinate) and follow it")
	run.Flags().BoolVar(&f.Detach, "detach", false, "with --nats: submit the run, print its id and return (follow it with tai fleet logs RUN --nats URL -f)")
	resume := &cobra.Command{
		Use:   "resume [flags] RUN",
		Short: "Continue an interrupted fleet run without redoing finished tasks",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Verbose = g.verbose
			return code(app.FleetResume(cmd.Context(), f, args[0], std))
		},
	}
	resume.ValidArgsFunction = fleetRuns
	addRunFlags(resume)
	var so outputFlag
	var statusNATS, listNATS app.NATSFlags
	status := &cobra.Command{
		Use:   "status [RUN]",
		Short: "Show where a fleet run stands (default: the latest run)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if statusNATS.URL != "" {
				return code(app.FleetStatusNATS(cmd.Context(), statusNATS, firstArg(args), so.asJSON(), std))
			}
			return code(app.FleetStatus(firstArg(args), so.asJSON(), std))
		},
	}
	so.add(status)
	addNATSFlags(status, &statusNATS, "a run over NATS: the state its coordinator publishes there")
	status.ValidArgsFunction = fleetRuns
	var pf app.FleetPlanFlags
	plan := &cobra.Command{
		Use:   "plan [flags] GOAL...",
		Short: "Ask an agent for a plan, validate it and save it for review",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.FleetPlan(cmd.Context(), pf, strings.Join(args, " "), std))
		},
	}
	plan.Flags().StringVarP(&pf.Agent, "agent", "a", "builtin", "agent preset, see: tai agents")
	plan.Flags().StringVar(&pf.AgentCmd, "agent-cmd", "", "launch this command instead of a preset")
	plan.Flags().StringVarP(&pf.Out, "out", "O", "plan.yaml", "save the plan here")
	_ = plan.RegisterFlagCompletionFunc("out", planFlagFiles)
	plan.Flags().StringVarP(&pf.Cwd, "cwd", "C", "", "workspace the agent may read (default: the current directory)")
	plan.Flags().StringVar(&pf.Approve, "approve", "reads", "permission mode for the planning agent")
	plan.Flags().DurationVar(&pf.Timeout, "timeout", 0, "cancel the planning run after this long")
	var lo outputFlag
	list := &cobra.Command{
		Use:   "list",
		Short: "List the fleet runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if listNATS.URL != "" {
				return code(app.FleetListNATS(cmd.Context(), listNATS, lo.asJSON(), std))
			}
			return code(app.FleetList(lo.asJSON(), std))
		},
	}
	lo.add(list)
	addNATSFlags(list, &listNATS, "list the runs on this NATS server instead of this host's")
	var lf app.FleetLogsFlags
	var logo outputFlag
	logs := &cobra.Command{
		Use:   "logs [RUN [TASK]]",
		Short: "Show a fleet run's events (one task's with TASK); -f follows a live run until it ends",
		Args:  cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			lf.JSON = logo.asJSON()
			task := ""
			if len(args) == 2 {
				task = args[1]
			}
			return code(app.FleetLogs(cmd.Context(), lf, firstArg(args), task, std))
		},
	}
	logs.Flags().BoolVarP(&lf.Follow, "follow", "f", false, "follow a live run's feed until the run ends")
	logo.add(logs)
	addNATSFlags(logs, &lf.NATS, "a run over NATS: read its events stream there (from any host)")
	logs.ValidArgsFunction = fleetRuns
	parent.AddCommand(run, resume, status, plan, list, logs)
	return parent
}

func newWorktree(std app.IO) *cobra.Command {
	parent := &cobra.Command{Use: "worktree", Short: "List and garbage-collect tai's git worktrees"}
	var f app.WorktreeFlags
	var o outputFlag
	list := &cobra.Command{
		Use:   "list",
		Short: "List tai's worktrees with their state (in-use, merged, unmerged, dirty, orphan)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.JSON = o.asJSON()
			return code(app.WorktreeList(cmd.Context(), f, std))
		},
	}
	o.add(list)
	list.Flags().StringVarP(&f.Repo, "repo", "C", "", "repository (default: the current directory)")
	gc := &cobra.Command{
		Use:   "gc",
		Short: "Remove worktrees and branches whose work is merged (also squash-merged) or pushed",
		Long: "Remove tai's worktrees and their branches when nothing would be lost: never one in use,\n" +
			"never a branch with commits that are neither merged (by ancestry, cherry-pick or squash) nor pushed,\n" +
			"never uncommitted changes, unless --force (which still spares worktrees in use).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.JSON = o.asJSON()
			return code(app.WorktreeGC(cmd.Context(), f, std))
		},
	}
	gc.Flags().BoolVarP(&f.DryRun, "dry-run", "n", false, "only say what would be removed")
	gc.Flags().BoolVar(&f.Force, "force", false, "also remove unmerged or dirty worktrees (never one in use)")
	gc.Flags().DurationVar(&f.OlderThan, "older-than", 0, "keep worktrees younger than this")
	o.add(gc)
	gc.Flags().StringVarP(&f.Repo, "repo", "C", "", "repository (default: the current directory)")
	parent.AddCommand(list, gc)
	return parent
}

func newSessions(std app.IO) *cobra.Command {
	var f app.SessionsFlags
	var recorded bool
	var o outputFlag
	c := &cobra.Command{
		Use:   "sessions",
		Short: "List the agent sessions tai ran in a workspace, newest first",
		Long: "List the agent sessions tai ran in a workspace, newest first. `tai run --continue` resumes the\n" +
			"newest resumable one of its agent and driver; `tai run --resume ID` any listed one.\n" +
			"With --agent (an ACP agent), the agent is asked too (session/list, every page): its own sessions in the\n" +
			"workspace (--all: everywhere) are shown next to tai's records. `tai sessions rm ID --agent NAME` deletes one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.JSON = o.asJSON()
			f.Ask = (f.Agent != "" || f.AgentCmd != "") && !recorded
			return code(app.Sessions(cmd.Context(), f, std))
		},
	}
	fl := c.Flags()
	fl.StringVarP(&f.Cwd, "cwd", "C", "", "workspace directory (default: the current directory)")
	fl.StringVarP(&f.Agent, "agent", "a", "", "this agent's sessions: tai's records and the agent's own list (session/list)")
	fl.StringVar(&f.AgentCmd, "agent-cmd", "", "ask this ACP agent command for its sessions")
	fl.BoolVar(&f.All, "all", false, "with --agent: the agent's sessions in every directory, not only the workspace")
	fl.BoolVar(&recorded, "recorded", false, "with --agent: only tai's records; do not start the agent")
	fl.IntVarP(&f.Limit, "limit", "n", 0, "at most this many (0: all)")
	o.add(c)
	fl.BoolVarP(&f.IDOnly, "quiet", "q", false, "print only the session ids")
	_ = c.RegisterFlagCompletionFunc("agent", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return app.AgentNames(), cobra.ShellCompDirectiveNoFileComp
	})
	var rf app.SessionsFlags
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "Delete one of the agent's own sessions (ACP session/delete)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.SessionsRm(cmd.Context(), rf, args[0], std))
		},
	}
	rm.Flags().StringVarP(&rf.Cwd, "cwd", "C", "", "workspace directory (default: the current directory)")
	rm.Flags().StringVarP(&rf.Agent, "agent", "a", "builtin", "the agent whose session it is")
	rm.Flags().StringVar(&rf.AgentCmd, "agent-cmd", "", "the ACP agent command whose session it is")
	c.AddCommand(rm)
	return c
}

// Completions that are not fixed lists.

// planFiles completes a fleet plan: YAML files.
func planFiles(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

func planFlagFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

func tomlFiles(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{"toml"}, cobra.ShellCompDirectiveFilterFileExt
}

// fleetRuns completes a fleet run id from the state directory.
func fleetRuns(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return app.FleetRunIDs(), cobra.ShellCompDirectiveNoFileComp
}

// auditLogs completes a run id with a log, or a file.
func auditLogs(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return app.RunIDs(), cobra.ShellCompDirectiveDefault
}

func newConfig(std app.IO) *cobra.Command {
	parent := &cobra.Command{Use: "config", Short: "Show tai's configuration: defaults and agent presets"}
	var cwd string
	var o outputFlag
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the configuration that applies here, and where each value came from",
		Long: "Show the configuration that applies in a workspace: the user's $XDG_CONFIG_HOME/tai/config.toml\n" +
			"(defaults for --agent, --driver, --approve, --output, and custom agent presets), then the project's\n" +
			".tai/config.toml or .tai.toml, which may set only agent, driver and output.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.ConfigShow(cwd, o.asJSON(), std))
		},
	}
	show.Flags().StringVarP(&cwd, "cwd", "C", "", "workspace directory (default: the current directory)")
	o.add(show)
	parent.AddCommand(show)
	return parent
}

func newDoctor(std app.IO) *cobra.Command {
	var cwd string
	var o outputFlag
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Say which agents and drivers work here, the Landlock ABI, tai's directories and stale worktrees",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.DoctorCmd(cmd.Context(), cwd, o.asJSON(), std))
		},
	}
	c.Flags().StringVarP(&cwd, "cwd", "C", "", "the repository whose worktrees to look at (default: the current directory)")
	o.add(c)
	return c
}

func newACP(std app.IO, g *globals) *cobra.Command {
	var f app.RunFlags
	c := &cobra.Command{
		Use:   "acp [run flags]",
		Short: "Be an ACP agent on stdin/stdout in front of any agent, with tai's policy in between",
		Long: "Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim, acpx) and other\n" +
			"ACP clients: each session the editor opens runs the agent the run flags name, with any driver.\n" +
			"What tai's policy leaves open is asked in the editor; the audit log and the session store see\n" +
			"these sessions like any other.",
		Example: "  tai acp --agent qwen --driver pty\n" +
			"  tai acp --agent claude --driver stream-json\n" +
			"  tai acp --agent-cmd 'opencode acp' --approve ask",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.AgentCmdSet = cmd.Flags().Changed("agent-cmd")
			f.Changed = cmd.Flags().Changed
			f.Verbose = g.verbose
			return code(app.ACP(cmd.Context(), f, std))
		},
	}
	addRunFlags(c, &f)
	return c
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

func newTop(std app.IO) *cobra.Command {
	var f app.TopFlags
	c := &cobra.Command{
		Use:   "top",
		Short: "Watch and answer every tai running on this machine: what waits for you first",
		Long: "A full-screen view of every live tai run, chat and fleet on this machine, read from their live feeds.\n" +
			"The attention queue (asks, questions, budgets, errors, finished turns) comes first, oldest first;\n" +
			"then one row per session or task. Enter peeks at an ask (tool call, options, diff, the rule that asked);\n" +
			"y allows once, a always for the run, f always for the fleet, n denies; a fleet's question takes a typed answer;\n" +
			"l follows a transcript. NO_COLOR is honoured.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return code(app.Top(cmd.Context(), f, std))
		},
	}
	c.Flags().BoolVar(&f.Once, "once", false, "print one frame and exit (no terminal needed)")
	c.Flags().IntVar(&f.Width, "width", 0, "--once's width in columns (default: the terminal's, else 120)")
	return c
}
