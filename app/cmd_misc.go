package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
)

// outputFlag is -o/--output text|json, with --json kept as an alias, on
// every command that prints data.
type outputFlag struct {
	output string
	json   bool
}

func (o *outputFlag) add(c *cobra.Command) {
	c.Flags().StringVarP(&o.output, "output", "o", OutputText, "output: text | json")
	c.Flags().BoolVar(&o.json, "json", false, "print JSON (same as -o json)")
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{OutputText, OutputJSON}, cobra.ShellCompDirectiveNoFileComp))
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		switch o.output {
		case OutputText, OutputJSON:
		default:
			return exitcode.With(exitcode.Usage, fmt.Errorf("--output must be text or json, not %q", o.output))
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}

// value is "json" when -o json or --json was given.
func (o *outputFlag) value() string {
	if o.json {
		return OutputJSON
	}
	return o.output
}

// asJSON is value() == json.
func (o *outputFlag) asJSON() bool { return o.value() == OutputJSON }

// NewCmdAgents is `tai agents`.
func NewCmdAgents(std IO) *cobra.Command {
	var o outputFlag
	c := &cobra.Command{
		Use:   "agents",
		Short: "List the known agents and whether each is installed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.asJSON() {
				return Agents(std.Out, true)
			}
			w, flush := fitTerminal(std) // one row a line on a narrow terminal
			if err := Agents(w, false); err != nil {
				return err
			}
			return flush()
		},
		Example: "  tai agents\n  tai agents -o json   # for scripts: each agent, its driver and whether it is installed",
	}
	o.add(c)
	return c
}

// NewCmdAgent is `tai agent builtin`.
func NewCmdAgent(std IO) *cobra.Command {
	parent := &cobra.Command{Use: "agent", Short: "Run an agent that tai itself provides"}
	parent.Example = "  tai agent builtin --print-script"
	var script string
	var printScript bool
	var pageSize int
	b := &cobra.Command{
		Use:   "builtin",
		Short: "Run tai's built-in ACP agent on stdin/stdout (no model needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return BuiltinAgent(cmd.Context(), script, printScript, pageSize, std)
		},
		Example: "  tai agent builtin --print-script > my-script.yaml   # start from the default script\n  tai run --agent-cmd \"tai agent builtin --script my-script.yaml\" \"hello\"   # an offline, scripted agent",
	}
	b.Flags().StringVar(&script, "script", "", "play this script (YAML or JSON) instead of the default")
	b.Flags().BoolVar(&printScript, "print-script", false, "print the default script and exit")
	b.Flags().IntVar(&pageSize, "page-size", 0, "sessions per session/list page (default 20)")
	parent.AddCommand(b)
	return parent
}

// NewCmdVersion is `tai version`.
func NewCmdVersion(std IO) *cobra.Command {
	var o outputFlag
	c := &cobra.Command{
		Use:   "version",
		Short: "Print tai's version: module version, commit, Go version, OS/arch",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return PrintVersion(std.Out, o.value())
		},
		Example: "  tai version\n  tai version -o json",
	}
	o.add(c)
	return c
}

// NewCmdModel is `tai model serve`.
func NewCmdModel(std IO, g *Globals) *cobra.Command {
	parent := &cobra.Command{Use: "model", Short: "A scripted model server for offline, deterministic agent runs"}
	parent.Example = "  tai model serve --script turns.yaml"
	var f ModelServeFlags
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Serve OpenAI, Anthropic and Gemini APIs from a script, printing the base URL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Verbose = g.Verbose
			return ModelServe(cmd.Context(), f, std)
		},
		Example: "  tai model serve --script turns.yaml --url-file url.txt   # then point an agent's API base URL at it",
	}
	fl := serve.Flags()
	fl.StringVar(&f.Script, "script", "", "script of turns (JSON or YAML)")
	fl.StringVar(&f.Addr, "addr", "127.0.0.1:0", "listen address (port 0 picks a free one)")
	fl.StringVar(&f.Log, "log", "", "append one JSON line per request to this file")
	fl.StringVar(&f.Cwd, "cwd", "", "value of {{CWD}} in the script (default: the current directory)")
	fl.StringVar(&f.PortFile, "url-file", "", "also write the base URL to this file (atomically)")
	parent.AddCommand(serve)
	return parent
}

// AuditShowFunc is what `tai audit show` does; nil runs it.
type AuditShowFunc func(arg string, f audit.Filter, asJSON bool, std IO) error

// NewCmdAudit is `tai audit verify` and `tai audit show`.
func NewCmdAudit(std IO, showF AuditShowFunc) *cobra.Command {
	if showF == nil {
		showF = AuditShow
	}
	parent := &cobra.Command{Use: "audit", Short: "Verify and read tai's hash-chained audit logs"}
	parent.Example = "  tai audit verify --complete RUN_ID\n  tai audit show RUN_ID"
	var complete bool
	var vo outputFlag
	verify := &cobra.Command{
		Use:   "verify FILE|RUN_ID",
		Short: "Check a log's hash chain; name the first bad line (non-zero exit on failure)",
		Long: "Check a log's hash chain; name the first bad line (non-zero exit on failure).\n\n" +
			"A log whose last entries were cut off still has an intact chain: in CI, use --complete, " +
			"which also fails a log without its run.end entry.",
		Example: "  tai audit verify --complete ~/.local/state/tai/audit/run-20261130-162447-e9495a.jsonl\n" +
			"  tai audit verify -o json RUN_ID",
		Args: oneArg("audit verify", "the log to verify: tai audit verify FILE|RUN_ID (tai sessions and tai fleet list show the runs)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return AuditVerify(args[0], complete, vo.asJSON(), std)
		},
	}
	verify.Flags().BoolVar(&complete, "complete", false, "fail a log that has no run.end entry (its end may have been cut off): the form for CI")
	vo.add(verify)
	var f audit.Filter
	var o outputFlag
	show := &cobra.Command{
		Use:   "show FILE|RUN_ID",
		Short: "Render a log readably, filtered by session, task and kind",
		Args:  oneArg("audit show", "the log to show: tai audit show FILE|RUN_ID (tai sessions and tai fleet list show the runs)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showF(args[0], f, o.asJSON(), std)
		},
		Example: "  tai audit show run-20261130-162447-e9495a\n  tai audit show --kind permission --task lint ~/.local/state/tai/fleet/RUN/audit.jsonl\n  tai audit show -o json RUN_ID",
	}
	show.Flags().StringVar(&f.Session, "session", "", "only this session (a prefix is enough)")
	show.Flags().StringVar(&f.Task, "task", "", "only this fleet task's sessions")
	show.Flags().StringSliceVar(&f.Kinds, "kind", nil, "only these kinds (permission matches permission.request and permission.decision)")
	o.add(show)
	verify.ValidArgsFunction, show.ValidArgsFunction = auditLogs, auditLogs
	_ = show.RegisterFlagCompletionFunc("session", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return SessionIDs(cmd.Context(), ""), cobra.ShellCompDirectiveNoFileComp
	})
	parent.AddCommand(verify, show)
	return parent
}

// NewCmdWorktree is `tai worktree list` and `tai worktree gc`.
func NewCmdWorktree(std IO) *cobra.Command {
	parent := &cobra.Command{Use: "worktree", Short: "List and garbage-collect tai's git worktrees"}
	parent.Example = "  tai worktree list\n  tai worktree gc --dry-run"
	var f WorktreeFlags
	var o outputFlag
	list := &cobra.Command{
		Use:   "list",
		Short: "List tai's worktrees with their state (in-use, merged, unmerged, dirty, orphan)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.JSON = o.asJSON()
			return WorktreeList(cmd.Context(), f, std)
		},
		Example: "  tai worktree list\n  tai worktree list -C ~/src/project -o json",
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
			return WorktreeGC(cmd.Context(), f, std)
		},
		Example: "  tai worktree gc --dry-run\n  tai worktree gc --older-than 168h",
	}
	gc.Flags().BoolVarP(&f.DryRun, "dry-run", "n", false, "only say what would be removed")
	gc.Flags().BoolVar(&f.Force, "force", false, "also remove unmerged or dirty worktrees (never one in use)")
	gc.Flags().DurationVar(&f.OlderThan, "older-than", 0, "keep worktrees younger than this")
	o.add(gc)
	gc.Flags().StringVarP(&f.Repo, "repo", "C", "", "repository (default: the current directory)")
	parent.AddCommand(list, gc)
	return parent
}

// SessionsFunc is what `tai sessions` does; nil runs it.
type SessionsFunc func(ctx context.Context, f SessionsFlags, std IO) error

// NewCmdSessions is `tai sessions` and `tai sessions rm`.
func NewCmdSessions(std IO, runF SessionsFunc) *cobra.Command {
	if runF == nil {
		runF = Sessions
	}
	var f SessionsFlags
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
			return runF(cmd.Context(), f, std)
		},
		Example: "  tai sessions\n  tai sessions --agent claude --all   # also the agent's own sessions, everywhere\n  tai sessions -q -n 1   # the newest session's id",
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
	_ = c.RegisterFlagCompletionFunc("agent", agentNames)
	var rf SessionsFlags
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "Delete one of the agent's own sessions (ACP session/delete)",
		Args:  oneArg("sessions rm", "the session to delete: tai sessions rm ID --agent NAME (tai sessions --agent NAME lists them)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return SessionsRm(cmd.Context(), rf, args[0], std)
		},
		Example: "  tai sessions rm builtin-397f8b80 --agent builtin",
	}
	rm.Flags().StringVarP(&rf.Cwd, "cwd", "C", "", "workspace directory (default: the current directory)")
	rm.Flags().StringVarP(&rf.Agent, "agent", "a", "builtin", "the agent whose session it is")
	rm.Flags().StringVar(&rf.AgentCmd, "agent-cmd", "", "the ACP agent command whose session it is")
	c.AddCommand(rm)
	return c
}

// NewCmdConfig is `tai config show`.
func NewCmdConfig(std IO) *cobra.Command {
	parent := &cobra.Command{Use: "config", Short: "Show tai's configuration: defaults and agent presets"}
	parent.Example = "  tai config show"
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
			return ConfigShow(cwd, o.asJSON(), std)
		},
		Example: "  tai config show\n  tai config show -C ~/src/project -o json",
	}
	show.Flags().StringVarP(&cwd, "cwd", "C", "", "workspace directory (default: the current directory)")
	o.add(show)
	parent.AddCommand(show)
	return parent
}

// NewCmdDoctor is `tai doctor`.
func NewCmdDoctor(std IO) *cobra.Command {
	var cwd string
	var o outputFlag
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Say which agents and drivers work here, the Landlock ABI, tai's directories and stale worktrees",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return DoctorCmd(cmd.Context(), cwd, o.asJSON(), std)
		},
		Example: "  tai doctor\n  tai doctor -o json",
	}
	c.Flags().StringVarP(&cwd, "cwd", "C", "", "the repository whose worktrees to look at (default: the current directory)")
	o.add(c)
	return c
}

// NewCmdTop is `tai top`.
func NewCmdTop(std IO) *cobra.Command {
	var f TopFlags
	var o outputFlag
	c := &cobra.Command{
		Use:   "top",
		Short: "Watch and answer every tai running on this machine: what waits for you first",
		Long: "A full-screen view of every live tai run, chat and fleet on this machine, read from their live feeds.\n" +
			"The attention queue (asks, questions, budgets, errors, finished turns) comes first, oldest first;\n" +
			"then one row per session or task. Enter peeks at an ask (tool call, options, diff, the rule that asked);\n" +
			"y allows once, a always for the run, f always for the fleet, n denies; a fleet's question takes a typed answer;\n" +
			"l follows a transcript. NO_COLOR is honoured.",
		Example: "  tai top\n  tai top --once --width 160\n  tai top --once -o json   # every live run's state, for scripts\n" +
			"  tai top --feed http://127.0.0.1:7777 --token-file ~/.tai-feed-token   # a run served with tai run --listen",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.JSON = o.asJSON()
			return Top(cmd.Context(), f, std)
		},
	}
	o.add(c)
	c.Flags().BoolVar(&f.Once, "once", false, "print one frame and exit (no terminal needed)")
	c.Flags().IntVar(&f.Width, "width", 0, "--once's width in columns (default: the terminal's, else 120)")
	c.Flags().StringVar(&f.Feed, "feed", "", "watch the feed a run serves on TCP (the http://HOST:PORT tai run --listen printed) instead of this machine's")
	c.Flags().StringVar(&f.TokenFile, "token-file", "", "with --feed: a file holding the feed's token (the Bearer token tai run --listen printed)")
	return c
}

// Completions that are not fixed lists.

func agentNames(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return AgentNames(), cobra.ShellCompDirectiveNoFileComp
}

var sandboxModes = cobra.FixedCompletions([]string{"auto", "on", "off"}, cobra.ShellCompDirectiveNoFileComp)

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

// completeFleetRuns completes a fleet run id from the state directory.
func completeFleetRuns(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return FleetRunIDs(), cobra.ShellCompDirectiveNoFileComp
}

// auditLogs completes a run id with a log, or a file.
func auditLogs(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return RunIDs(), cobra.ShellCompDirectiveDefault
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
