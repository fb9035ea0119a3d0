package app

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
)

// FleetFlags are `tai fleet run` and `tai fleet resume`'s flags.
type FleetFlags struct {
	Concurrency int
	FailFast    bool
	Output      string // text | json
	JUnit       string
	RunID       string
	Repo        string
	Verbose     bool
	CancelGrace time.Duration
	Feed        FeedFlags
	Sandbox     string // --sandbox: auto | on | off
	// SandboxWrite is --sandbox-write: more write roots for every task.
	SandboxWrite []string
	// Over NATS: workers run the tasks (see hub.go).
	NATS   NATSFlags
	Remote string        // the git remote workers clone and push to
	Lease  time.Duration // a claim's lease (default 30s)
	// Submit hands the run to the hub's coordinator (tai hub --coordinate)
	// and follows it; Detach then returns at once.
	Submit bool
	Detach bool
	// report, if set, replaces the fleet's summary once the run ended
	// (tai compare); o.Audit is the run's open log.
	report func(ctx context.Context, o fleet.Options, st *fleet.State, std IO) error
}

// FleetPlanFlags are `tai fleet plan`'s flags.
type FleetPlanFlags struct {
	Agent    string
	AgentCmd string
	Out      string
	Cwd      string
	Approve  string
	Timeout  time.Duration
}

// FleetLogsFlags are `tai fleet logs`'s flags.
type FleetLogsFlags struct {
	Follow bool
	JSON   bool
	NATS   NATSFlags // a run over NATS: its events stream, from any host
}

// NATSFlags say how to reach a NATS server: a URL, and credentials from a
// creds file or a token file (or TAI_NATS_CREDS / TAI_NATS_TOKEN), never on
// the command line.
type NATSFlags struct {
	URL       string
	Creds     string
	TokenFile string
}

// HubFlags are `tai hub`'s flags.
type HubFlags struct {
	Listen    string
	Store     string
	TokenFile string
	// Insecure serves without a token: without one given, the hub makes
	// one (remote.HubToken).
	Insecure bool
	Verbose  bool
	// Server is the nats-server program (--nats-server).
	Server string
	// Coordinate: the hub also coordinates the runs submitted to it (tai
	// fleet run --nats URL --submit).
	Coordinate bool
	// NATS, with Coordinate: coordinate on this server instead of
	// starting one.
	NATS NATSFlags
	// Web, when its Listen is set (--serve), serves tai serve's page on
	// the hub too, with the hub's runs.
	Web ServeFlags
}

// WorkerFlags are `tai worker`'s flags.
type WorkerFlags struct {
	NATS    NATSFlags
	Name    string
	Slots   int
	Agents  []string
	Dir     string // clones and state; default the state directory's worker/NAME
	Lease   time.Duration
	Verbose bool
	Sandbox string // --sandbox: auto | on | off
	// SandboxWrite is --sandbox-write: more write roots for every task.
	SandboxWrite []string
}

// FleetFunc is what `tai fleet run PLAN` and `tai fleet resume RUN` do
// once their flags are parsed; arg is the plan or the run. Nil runs the
// command; a test gives its own.
type FleetFunc func(ctx context.Context, f FleetFlags, arg string, std IO) error

// NewCmdFleet is `tai fleet` and its subcommands.
func NewCmdFleet(std IO, g *Globals) *cobra.Command {
	parent := &cobra.Command{Use: "fleet", Short: "Run a plan of agent tasks in git worktrees, under one budget"}
	parent.Example = "  tai fleet plan \"add a LICENSE\"   # draft a plan\n  tai fleet run plan.yaml\n  tai fleet status"
	parent.AddCommand(NewCmdFleetRun(std, g, nil), NewCmdFleetResume(std, g, nil), newCmdFleetStatus(std), newCmdFleetPlan(std),
		newCmdFleetList(std), newCmdFleetLogs(std), newCmdFleetPause(std))
	return parent
}

// NewCmdFleetRun is `tai fleet run PLAN`.
func NewCmdFleetRun(std IO, g *Globals, runF FleetFunc) *cobra.Command {
	if runF == nil {
		runF = FleetRun
	}
	var f FleetFlags
	c := &cobra.Command{
		Use:   "run [flags] PLAN.yaml",
		Short: "Run a plan's tasks, each in its own worktree, and merge the results back",
		Long: "Run a plan's tasks as a DAG, each with its agent in its own git worktree (branch tai/RUN/TASK),\n" +
			"at most --concurrency at a time, under the plan's budget. Finished branches are rebased and\n" +
			"fast-forwarded into the plan's target branch one at a time, never through your checkout.\n" +
			"A task at its account's usage limit parks the account's tasks until the reset (the plan's quota: bounds it).\n" +
			"Exit 0 if every task merged; 1 a task failed; 6 a budget ran out; 7 a merge conflict; 75 parked; 130 interrupted.",
		Example: "  tai fleet run plan.yaml\n  tai fleet run -j 8 --output json --junit fleet.xml plan.yaml",
		Args:    oneArg("fleet run", "a plan file: tai fleet run PLAN.yaml (tai fleet plan \"GOAL\" drafts one)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Verbose = g.Verbose
			return runF(cmd.Context(), f, args[0], std)
		},
	}
	c.ValidArgsFunction = planFiles
	f.addFlags(c)
	c.Flags().StringVar(&f.RunID, "run-id", "", "name the run (default: fleet-DATE-TIME-RANDOM)")
	c.Flags().BoolVar(&f.Submit, "submit", false, "with --nats: hand the run to the hub's coordinator (tai hub --coordinate) and follow it, answering its asks on a terminal")
	c.Flags().BoolVar(&f.Detach, "detach", false, "with --nats: submit the run, print its id and return (follow it with tai fleet logs RUN --nats URL -f)")
	return c
}

// NewCmdFleetResume is `tai fleet resume RUN`.
func NewCmdFleetResume(std IO, g *Globals, runF FleetFunc) *cobra.Command {
	if runF == nil {
		runF = FleetResume
	}
	var f FleetFlags
	c := &cobra.Command{
		Use:   "resume [flags] RUN",
		Short: "Continue an interrupted fleet run without redoing finished tasks; release a running one's parks",
		Long: "Continue an interrupted (or parked) fleet run without redoing finished tasks: parked tasks resume\n" +
			"their own sessions, and an account parked at a usage limit keeps its reset time. Of a run that is\n" +
			"running, it releases every park now (after tai fleet pause, or a limit you know has reset); with\n" +
			"--nats URL, through its coordinator there (the hub's, for a run submitted with --submit or --detach).",
		Args: oneArg("fleet resume", "the run to resume: tai fleet resume RUN (tai fleet list shows the runs)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.Verbose = g.Verbose
			return runF(cmd.Context(), f, args[0], std)
		},
		Example: "  tai fleet resume fleet-20261201-104627-9f2c1a\n  tai fleet resume -j 2 fleet-20261201-104627-9f2c1a",
	}
	c.ValidArgsFunction = completeFleetRuns
	f.addFlags(c)
	return c
}

// addFlags defines the flags tai fleet run and tai fleet resume share.
func (f *FleetFlags) addFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVarP(&f.Repo, "repo", "C", "", "repository (default: the current directory's; a resumed run's must be its own)")
	fl.IntVarP(&f.Concurrency, "concurrency", "j", 0, "tasks at a time (default: the plan's, else 4)")
	fl.BoolVar(&f.FailFast, "fail-fast", false, "stop every task once one fails (default: the plan's)")
	fl.StringVarP(&f.Output, "output", "o", "text", "output: text (live table on a terminal, progress lines when piped) | json (summary on stdout) | stream-json (every task's frames, fleet frames, a fleet result frame)")
	fl.StringVar(&f.JUnit, "junit", "", "write a JUnit XML report here")
	addCancelGrace(fl, &f.CancelGrace)
	f.NATS.addFlags(fl, "a NATS server with JetStream (nats://host:4222): tai worker processes there run the tasks")
	fl.StringVar(&f.Remote, "remote", "", "with --nats: the git remote workers clone and push to (default: this repository by path)")
	fl.DurationVar(&f.Lease, "lease", 0, "with --nats: how long a worker's claim lasts without a heartbeat (default 30s)")
	addTaskSandbox(fl, &f.Sandbox)
	addSandboxWrite(fl, &f.SandboxWrite)
	f.Feed.addFlags(fl)
}

// oneArg takes exactly one argument, and says what it is when it is
// missing (what names the argument: "a plan file: ...").
func oneArg(cmd, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return exitcode.Usagef("%s needs %s", cmd, what)
		case len(args) > 1:
			return exitcode.Usagef("%s takes one argument, not %d (%s): %s", cmd, len(args), strings.Join(args, " "), what)
		}
		return nil
	}
}

// addSandboxWrite is --sandbox-write, wherever --sandbox is a flag.
func addSandboxWrite(fl *pflag.FlagSet, dirs *[]string) {
	fl.StringArrayVar(dirs, "sandbox-write", nil, "also let the agent write `DIR`, as the policy's write_roots: writable under the sandbox, not \"outside the workspace\" for the policy; relative to the workspace; tai's own files and secrets stay closed (repeatable)")
}

// addTaskSandbox is --sandbox for commands that run tasks: fleets, workers.
func addTaskSandbox(fl *pflag.FlagSet, s *string) {
	fl.StringVar(s, "sandbox", "auto", "confine each task's agent with Landlock: auto (where the kernel has it) | on (fail without it) | off")
}

func newCmdFleetStatus(std IO) *cobra.Command {
	var o outputFlag
	var n NATSFlags
	c := &cobra.Command{
		Use:   "status [RUN]",
		Short: "Show where a fleet run stands (default: the latest run)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return FleetStatus(cmd.Context(), n, firstArg(args), o.asJSON(), std)
		},
		Example: "  tai fleet status   # the latest run\n  tai fleet status fleet-20261201-104627-9f2c1a -o json",
	}
	o.add(c)
	n.addFlags(c.Flags(), "a run over NATS: the state its coordinator publishes there")
	c.ValidArgsFunction = completeFleetRuns
	return c
}

func newCmdFleetPlan(std IO) *cobra.Command {
	var f FleetPlanFlags
	c := &cobra.Command{
		Use:   "plan [flags] GOAL...",
		Short: "Ask an agent for a plan, validate it and save it for review",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return FleetPlan(cmd.Context(), f, strings.Join(args, " "), std)
		},
		Example: "  tai fleet plan --agent claude \"add a LICENSE and a CONTRIBUTING guide\"\n  tai fleet plan -O plans/docs.yaml \"document every package\"",
	}
	fl := c.Flags()
	fl.StringVarP(&f.Agent, "agent", "a", "builtin", "agent preset, see: tai agents")
	fl.StringVar(&f.AgentCmd, "agent-cmd", "", "launch this command instead of a preset")
	fl.StringVarP(&f.Out, "out", "O", "plan.yaml", "save the plan here")
	_ = c.RegisterFlagCompletionFunc("out", planFlagFiles)
	fl.StringVarP(&f.Cwd, "cwd", "C", "", "workspace the agent may read (default: the current directory)")
	fl.StringVar(&f.Approve, "approve", "reads", "permission mode for the planning agent")
	fl.DurationVar(&f.Timeout, "timeout", 0, "cancel the planning run after this long")
	return c
}

func newCmdFleetList(std IO) *cobra.Command {
	var o outputFlag
	var n NATSFlags
	c := &cobra.Command{
		Use:   "list",
		Short: "List the fleet runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return FleetList(cmd.Context(), n, o.asJSON(), std)
		},
		Example: "  tai fleet list\n  tai fleet list -o json",
	}
	o.add(c)
	n.addFlags(c.Flags(), "list the runs on this NATS server instead of this host's")
	return c
}

func newCmdFleetLogs(std IO) *cobra.Command {
	var f FleetLogsFlags
	var o outputFlag
	c := &cobra.Command{
		Use:   "logs [RUN [TASK]]",
		Short: "Show a fleet run's events (one task's with TASK); -f follows a live run until it ends",
		Args:  cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.JSON = o.asJSON()
			task := ""
			if len(args) == 2 {
				task = args[1]
			}
			return FleetLogs(cmd.Context(), f, firstArg(args), task, std)
		},
		Example: "  tai fleet logs   # the latest run\n  tai fleet logs fleet-20261201-104627-9f2c1a lint\n  tai fleet logs -f   # follow a live run until it ends",
	}
	c.Flags().BoolVarP(&f.Follow, "follow", "f", false, "follow a live run's feed until the run ends")
	o.add(c)
	f.NATS.addFlags(c.Flags(), "a run over NATS: read its events stream there (from any host)")
	c.ValidArgsFunction = completeFleetRuns
	return c
}

// addFlags defines how to reach NATS: --nats (its usage says what for),
// and the credentials' files.
func (n *NATSFlags) addFlags(fl *pflag.FlagSet, usage string) {
	fl.StringVar(&n.URL, "nats", "", usage)
	fl.StringVar(&n.Creds, "nats-creds", "", "NATS credentials file (or TAI_NATS_CREDS)")
	fl.StringVar(&n.TokenFile, "nats-token-file", "", "a file holding the NATS token (or TAI_NATS_TOKEN)")
}

// HubFunc is what `tai hub` does; nil runs it.
type HubFunc func(ctx context.Context, f HubFlags, std IO) error

// NewCmdHub is `tai hub`.
func NewCmdHub(std IO, g *Globals, runF HubFunc) *cobra.Command {
	if runF == nil {
		runF = Hub
	}
	var f HubFlags
	c := &cobra.Command{
		Use:   "hub [flags]",
		Short: "Run a NATS server with JetStream for fleets across hosts",
		Long: "Run a NATS server with JetStream (nats-server 2.9 or later, started and watched by tai) that tai workers\n" +
			"and fleet runs (--nats URL) share. Its URL is the first line on stdout. Restarted on the same --store it keeps\n" +
			"every task, lease and result. The server is its own program: nats-server on PATH or next to tai, or --nats-server.\n" +
			"With --coordinate it also schedules, answers for and merges the runs submitted to it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Verbose = g.Verbose
			return runF(cmd.Context(), f, std)
		},
		Example: "  tai hub   # NATS with JetStream on 127.0.0.1:4222, behind a token kept for this host\n  tai hub --listen 0.0.0.0:4222 --coordinate",
	}
	c.Flags().StringVar(&f.Listen, "listen", "127.0.0.1:4222", "address to listen on (port 0: a free one)")
	c.Flags().StringVar(&f.Store, "store", "", "JetStream store directory (default: the state directory's hub/)")
	c.Flags().StringVar(&f.TokenFile, "token-file", "", "clients must present the token in this file (or TAI_NATS_TOKEN; default: one tai makes and keeps for this host's clients)")
	c.Flags().BoolVar(&f.Insecure, "insecure", false, "serve without a token: anyone who reaches the port (an agent on this host too) may submit runs and forge results")
	c.Flags().StringVar(&f.Server, "nats-server", "", "the nats-server program to run (or TAI_NATS_SERVER; default: nats-server on PATH, then next to tai)")
	c.Flags().BoolVar(&f.Coordinate, "coordinate", false, "also coordinate the runs submitted to the hub (tai fleet run --nats URL --submit), resuming unfinished ones on restart")
	f.NATS.addFlags(c.Flags(), "with --coordinate: coordinate on this NATS server instead of starting one")
	c.Flags().StringVar(&f.Web.Listen, "serve", "", "also serve tai serve's page, with the hub's runs, on this address (--serve=ADDR; --serve alone: "+DefaultServeAddr+")")
	c.Flags().Lookup("serve").NoOptDefVal = DefaultServeAddr
	f.Web.addTLSFlags(c)
	return c
}

// WorkerFunc is what `tai worker` does; nil runs it.
type WorkerFunc func(ctx context.Context, f WorkerFlags, std IO) error

// NewCmdWorker is `tai worker`.
func NewCmdWorker(std IO, g *Globals, runF WorkerFunc) *cobra.Command {
	if runF == nil {
		runF = Worker
	}
	var f WorkerFlags
	c := &cobra.Command{
		Use:   "worker --nats URL [flags]",
		Short: "Run fleet tasks offered over NATS, each in a worktree of a clone kept per repository",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Verbose = g.Verbose
			return runF(cmd.Context(), f, std)
		},
		Example: "  tai worker --nats nats://hub.example:4222 --nats-token-file ~/hub-token --agents builtin,claude --slots 2",
	}
	fl := c.Flags()
	f.NATS.addFlags(fl, "the NATS server with JetStream (nats://host:4222) to take tasks from")
	fl.StringVar(&f.Name, "name", "", "the worker's name, unique among workers (default HOST-PID)")
	fl.IntVar(&f.Slots, "slots", 1, "tasks at once")
	fl.StringSliceVar(&f.Agents, "agents", []string{"builtin"}, "agents this worker runs (installed here)")
	fl.StringVar(&f.Dir, "dir", "", "clones, worktrees and audit logs (default: $XDG_DATA_HOME/tai/worker/NAME)")
	addTaskSandbox(fl, &f.Sandbox)
	addSandboxWrite(fl, &f.SandboxWrite)
	fl.DurationVar(&f.Lease, "lease", 0, "ack wait of a task consumer this worker creates (default 30s; a run's coordinator sets its own)")
	return c
}
