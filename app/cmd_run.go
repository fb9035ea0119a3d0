package app

import (
	"context"
	"io"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tai-dev/tai/agentspec"
	"github.com/tai-dev/tai/config"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/ttyin"
	"github.com/tai-dev/tai/policy"
)

// RunFlags are `tai run`'s flags.
type RunFlags struct {
	Agent           string
	AgentCmd        string
	AgentCmdSet     bool // --agent-cmd was given (an empty one is refused)
	Driver          string
	Cwd             string
	Approve         string
	NonInteractive  string
	AllowDenials    bool
	Mode            string
	Model           string
	Set             []string
	Resume          string
	Continue        bool
	Fork            string
	AddDir          []string
	Auth            string
	MCP             []string
	Files           []string
	EmbedFiles      bool
	Timeout         time.Duration
	CancelGrace     time.Duration
	Output          string
	Trace           string
	Verbose         bool
	MaxLineBytes    int64
	MaxMessageBytes int64
	Env             []string
	Audit           string
	NoAudit         bool
	Policy          string
	Allow           []string
	Ask             []string
	Deny            []string
	Remember        string
	Redact          []string
	// PTYSize is COLSxROWS for the pty driver's screen.
	PTYSize string
	// Sandbox is --sandbox: auto | on | off.
	Sandbox string
	// SandboxWrite is --sandbox-write: more write roots (write_roots).
	SandboxWrite []string
	// NetAllow is --net-allow: HOST:PORT the agent may connect to; given,
	// it turns the network rule on.
	NetAllow []string
	// InputFormat "stream-json" makes tai an agent its parent drives on
	// stdin (cap.md's agent-side binding); "" or "text" is the prompt
	// from the arguments.
	InputFormat string

	// Changed reports whether a flag was given on the command line; the
	// config's defaults fill the others. Nil: every field is as given.
	Changed func(flag string) bool

	Feed FeedFlags

	// WaitQuota is --wait-quota[=DURATION]: at the agent's usage limit,
	// wait up to that long for the reset and resume (0: end parked).
	WaitQuota time.Duration
	// MaxResumes is --max-resumes: at most that many resumes after a
	// limit (0: the policy's quota_resumes, else runner's default).
	MaxResumes int
}

// RunOptions are what tai run, tai chat and tai acp run with: their flags
// and the dependencies the command fills in where it is built (gh's
// Options). The front end that runs the session adds who answers the
// agent where the terminal does not.
type RunOptions struct {
	Flags RunFlags
	IO    IO
	// SetProcs sets how many threads run Go code at once
	// (runtime.GOMAXPROCS): the whole process's, so only the command
	// tai's main builds sets it; nil (a test running a command in
	// process) leaves it as it is.
	SetProcs func(n int)
	// LoadConfig reads the user's and the workspace's configuration
	// (nil: loadConfig); FindAgent finds the agent the flags name (nil:
	// agentspec.ResolveAgent). Both run once per command (resolveRun).
	LoadConfig func(workspace string) (config.Config, error)
	FindAgent  func(agentspec.Agent) (agentspec.ResolvedAgent, error)

	answerer policy.Prompter // the parent, under --input-format stream-json
	chat     bool            // tai chat: the prompts come as lines
	// termIn, above and hold are chat's terminal: its one reader, shared
	// by the line editor and the questions, the writer that prints the
	// session's output above the line being typed, and what takes the
	// terminal for a question (nil: not a terminal).
	termIn   *ttyin.Input
	above    func(io.Writer) io.Writer
	hold     func(context.Context) (func(), error)
	prompter policy.Prompter // the human where the terminal is not: an editor, under tai acp
	// editorForms is that editor's elicitation forms (nil: it shows none).
	editorForms elicit.Answerer
}

// FeedFlags are the live feed's flags (tai run, tai fleet run).
type FeedFlags struct {
	// Listen also serves the feed on TCP at this address, behind a bearer
	// token printed on stderr.
	Listen string
	// NoFeed: no socket (nothing can watch or answer this run).
	NoFeed bool
	// NotifyURL gets a JSON POST when something starts waiting for a human.
	NotifyURL string
	// NoNotify: no bell, OSC 9 or notify-send.
	NoNotify bool
}

// Globals are the flags every command takes: the root's persistent ones.
type Globals struct {
	Verbose bool
}

// RunFunc is what `tai run`, `tai chat` and `tai acp` do once their flags
// are parsed into RunOptions. A constructor given nil runs the command; a
// test gives its own to see the options without a process.
type RunFunc func(ctx context.Context, o RunOptions, args []string) error

// NewCmdRun is `tai run`.
func NewCmdRun(std IO, g *Globals, runF RunFunc) *cobra.Command {
	if runF == nil {
		runF = Run
	}
	o := RunOptions{IO: std, SetProcs: func(n int) { runtime.GOMAXPROCS(n) }}
	f := &o.Flags
	c := &cobra.Command{
		Use:   "run [flags] PROMPT...",
		Short: "Run one prompt turn against an agent and stream it",
		Long: "Run one prompt turn against an agent. Without --agent, tai's built-in agent runs a scripted demo\n" +
			"of every feature, needing no model or API key. Use - as the prompt to read it from stdin.",
		Example: "  tai run \"show me what you can do\"\n" +
			"  tai run --agent qwen --approve all \"add a README\"\n" +
			"  tai run --agent-cmd 'npx -y @agentclientprotocol/claude-agent-acp' --output json \"fix the tests\"",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.fromCommand(cmd, g, std); err != nil {
				return err
			}
			return runF(cmd.Context(), o, args)
		},
	}
	addRunFlags(c, f)
	return c
}

// NewCmdChat is `tai chat`: tai run's flags, one turn per line.
func NewCmdChat(std IO, g *Globals, runF RunFunc) *cobra.Command {
	if runF == nil {
		runF = Chat
	}
	c := NewCmdRun(std, g, runF)
	c.Use, c.Short = "chat [flags] [FIRST PROMPT...]", "An interactive session: one turn per line, with history and Tab completion"
	c.Long = "An interactive, multi-turn session with an agent (also `tai run` with no prompt on a terminal). On a\n" +
		"terminal: a line editor with history (Up/Down), Tab completion of the agent's slash commands (with\n" +
		"their input hints) and of /mode and /model; Ctrl-C cancels the running turn, not the session; Ctrl-D\n" +
		"or /quit ends it. From a pipe: one prompt per line. Every turn is in one audit log and session record."
	c.Example = "  tai chat\n  tai chat --agent qwen --approve ask\n  printf 'first\\nsecond\\n' | tai chat --agent codex"
	return c
}

// NewCmdACP is `tai acp`: tai run's flags, tai an ACP agent in front of
// the agent they name.
func NewCmdACP(std IO, g *Globals, runF RunFunc) *cobra.Command {
	if runF == nil {
		runF = func(ctx context.Context, o RunOptions, _ []string) error { return ACP(ctx, o) }
	}
	c := NewCmdRun(std, g, runF)
	c.Use, c.Short = "acp [run flags]", "Be an ACP agent on stdin/stdout in front of any agent, with tai's policy in between"
	c.Long = "Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim, acpx) and other\n" +
		"ACP clients: each session the editor opens runs the agent the run flags name, with any driver.\n" +
		"What tai's policy leaves open is asked in the editor; the audit log and the session store see\n" +
		"these sessions like any other."
	c.Example = "  tai acp --agent qwen --driver pty\n" +
		"  tai acp --agent claude --driver stream-json\n" +
		"  tai acp --agent-cmd 'opencode acp' --approve ask"
	c.Args = cobra.NoArgs
	return c
}

// fromCommand fills what the flags alone do not say: which were given (the
// config fills the others), -v, and the working directory from IO.
func (f *RunFlags) fromCommand(cmd *cobra.Command, g *Globals, std IO) error {
	f.AgentCmdSet = cmd.Flags().Changed("agent-cmd")
	f.Changed = cmd.Flags().Changed
	f.Verbose = g.Verbose
	cwd, err := workdir(f.Cwd, std)
	f.Cwd = cwd
	return err
}

// workdir is dir, or the working directory when dir is "".
func workdir(dir string, std IO) (string, error) {
	if dir != "" {
		return dir, nil
	}
	wd, err := std.Wd()
	if err != nil {
		return "", exitcode.Usagef("working directory: %v", err)
	}
	return wd, nil
}

// addRunFlags defines the run flags on c: tai run's, which tai chat and
// tai acp take too.
func addRunFlags(c *cobra.Command, f *RunFlags) {
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
	fl.DurationVar(&f.WaitQuota, "wait-quota", 0, "at the agent's usage limit, wait up to this long for the reset and resume the same session (alone: "+DefaultQuotaWait.String()+"; else the run ends parked, exit 75)")
	fl.Lookup("wait-quota").NoOptDefVal = DefaultQuotaWait.String()
	fl.IntVar(&f.MaxResumes, "max-resumes", 0, "resume at most this many times after usage limits (default: the policy's quota_resumes, else 3)")
	addCancelGrace(fl, &f.CancelGrace)
	fl.StringVarP(&f.Output, "output", "o", "text", "output: text | json | stream-json")
	fl.StringVar(&f.Trace, "trace", "", "write the raw wire transcript (secrets redacted) to this file")
	fl.Int64Var(&f.MaxLineBytes, "max-line-bytes", 256<<20, "largest protocol line accepted; longer ones are skipped")
	fl.Int64Var(&f.MaxMessageBytes, "max-message-bytes", 256<<20, "largest message text kept, over all its chunks; the rest is skipped and reported")
	fl.StringArrayVarP(&f.Env, "env", "e", nil, "extra environment for the agent, KEY=VALUE (repeatable)")
	fl.StringVar(&f.Audit, "audit", "", "write the audit log here (default: $XDG_STATE_HOME/tai/audit/RUN.jsonl)")
	fl.BoolVar(&f.NoAudit, "no-audit", false, "do not write an audit log")
	fl.StringVar(&f.Sandbox, "sandbox", "auto", "confine the agent with Landlock: auto (where the kernel can) | on (fail where it cannot) | off")
	addSandboxWrite(fl, &f.SandboxWrite)
	fl.StringSliceVar(&f.NetAllow, "net-allow", nil, "turn the sandbox's network rule on: TCP only to these HOST:PORT (the port is what Landlock checks) and the model endpoint (repeatable, comma lists)")
	f.Feed.addFlags(fl)
	fl.StringArrayVar(&f.Redact, "redact", nil, "also redact matches of this regexp in the audit log and trace; a (?P<secret>...) group limits it (repeatable)")
	_ = c.RegisterFlagCompletionFunc("agent", agentNames)
	_ = c.RegisterFlagCompletionFunc("driver", cobra.FixedCompletions(DriverNames(), cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("resume", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		ws, _ := cmd.Flags().GetString("cwd")
		return SessionIDs(cmd.Context(), ws), cobra.ShellCompDirectiveNoFileComp
	})
	_ = c.RegisterFlagCompletionFunc("policy", tomlFiles)
	_ = c.RegisterFlagCompletionFunc("approve", cobra.FixedCompletions([]string{"all", "reads", "ask", "deny", "yolo"}, cobra.ShellCompDirectiveNoFileComp))
	_ = c.RegisterFlagCompletionFunc("sandbox", sandboxModes)
	_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{OutputText, OutputJSON, OutputStreamJSON}, cobra.ShellCompDirectiveNoFileComp))
}

// addCancelGrace is --cancel-grace, which tai run and tai fleet share.
func addCancelGrace(fl *pflag.FlagSet, d *time.Duration) {
	fl.DurationVar(d, "cancel-grace", 0, "how long a cancelled agent gets before it is killed (default 3s)")
}

// addFlags defines the live feed's flags, which tai run and tai fleet
// share.
func (f *FeedFlags) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.Listen, "listen", "", "also serve the live feed on TCP at this address (e.g. 127.0.0.1:7777), behind a bearer token printed on stderr")
	fl.BoolVar(&f.NoFeed, "no-feed", false, "no live feed: tai top cannot watch or answer this run")
	fl.StringVar(&f.NotifyURL, "notify-url", "", "POST a JSON notice here when something starts waiting for you (coalesced)")
	fl.BoolVar(&f.NoNotify, "no-notify", false, "no bell, OSC 9 or notify-send when something starts waiting for you")
}
