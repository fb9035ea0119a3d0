package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
)

// testIO is an IO with no process behind it: buffers for the streams, an
// environment and a working directory of the test's, no terminal.
func testIO(env map[string]string) (IO, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return IO{
		In: strings.NewReader(""), Out: &out, Err: &errb,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Environ: func() []string {
			var kv []string
			for k, v := range env {
				kv = append(kv, k+"="+v)
			}
			return kv
		},
		Getwd:      func() (string, error) { return "/injected/wd", nil },
		OpenTTY:    func() (*os.File, error) { return nil, errors.New("no terminal in a test") },
		IsTerminal: func(any) bool { return false },
	}, &out, &errb
}

// execute runs c under a root with the global flags, as cmd/tai does, and
// returns what the command returned.
func execute(t *testing.T, c *cobra.Command, g *Globals, args ...string) error {
	t.Helper()
	root := &cobra.Command{Use: "tai", SilenceErrors: true, SilenceUsage: true}
	root.PersistentFlags().BoolVarP(&g.Verbose, "verbose", "v", false, "")
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.AddCommand(c)
	root.SetArgs(append([]string{c.Name()}, args...))
	return root.ExecuteContext(context.Background())
}

// The run flags become RunFlags the same way for tai run, tai chat and tai
// acp: defaults, given flags, -v, and the working directory from IO.
func TestRunFlagsToOptions(t *testing.T) {
	def := RunFlags{Agent: "builtin", Cwd: "/injected/wd", InputFormat: "text", Output: OutputText, Sandbox: "auto",
		MaxLineBytes: 256 << 20, MaxMessageBytes: 256 << 20}
	with := func(edit func(*RunFlags)) RunFlags { f := def; edit(&f); return f }
	for _, tc := range []struct {
		name     string
		args     []string
		want     RunFlags
		wantArgs []string
		changed  []string // flags the config must not override
	}{
		{"defaults", []string{"hi"}, def, []string{"hi"}, nil},
		{"agent and driver", []string{"-a", "qwen", "--driver", "pty", "fix", "it"},
			with(func(f *RunFlags) { f.Agent, f.Driver = "qwen", "pty" }), []string{"fix", "it"}, []string{"agent", "driver"}},
		{"empty agent-cmd is given, not absent", []string{"--agent-cmd", "", "hi"},
			with(func(f *RunFlags) { f.AgentCmdSet = true }), []string{"hi"}, []string{"agent-cmd"}},
		{"cwd given", []string{"-C", "/tmp", "hi"}, with(func(f *RunFlags) { f.Cwd = "/tmp" }), []string{"hi"}, []string{"cwd"}},
		{"verbose before the command", []string{"hi", "-v"}, with(func(f *RunFlags) { f.Verbose = true }), []string{"hi"}, nil},
		{"policy rules repeat", []string{"--allow", "execute:go test *", "--allow", "read", "--deny", "edit:**/.env", "--approve", "ask", "hi"},
			with(func(f *RunFlags) {
				f.Allow, f.Deny, f.Approve = []string{"execute:go test *", "read"}, []string{"edit:**/.env"}, "ask"
			}), []string{"hi"}, []string{"approve"}},
		{"write roots repeat", []string{"--sandbox-write", "/out", "--sandbox-write", "~/.foo", "hi"},
			with(func(f *RunFlags) { f.SandboxWrite = []string{"/out", "~/.foo"} }), []string{"hi"}, nil},
		{"limits and times", []string{"--timeout", "2s", "--cancel-grace", "1s", "--max-line-bytes", "10", "--max-message-bytes", "20", "hi"},
			with(func(f *RunFlags) {
				f.Timeout, f.CancelGrace, f.MaxLineBytes, f.MaxMessageBytes = 2*time.Second, time.Second, 10, 20
			}), []string{"hi"}, nil},
		{"output, env, files", []string{"-o", "json", "-e", "A=1", "-f", "x.go", "--embed", "--no-audit", "hi"},
			with(func(f *RunFlags) {
				f.Output, f.Env, f.Files, f.EmbedFiles, f.NoAudit = OutputJSON, []string{"A=1"}, []string{"x.go"}, true, true
			}), []string{"hi"}, []string{"output"}},
		{"sandbox and network", []string{"--sandbox", "on", "--net-allow", "a:1,b:2", "hi"},
			with(func(f *RunFlags) { f.Sandbox, f.NetAllow = "on", []string{"a:1", "b:2"} }), []string{"hi"}, nil},
		{"feed", []string{"--listen", "127.0.0.1:0", "--no-notify", "--notify-url", "http://x", "hi"},
			with(func(f *RunFlags) { f.Feed = FeedFlags{Listen: "127.0.0.1:0", NoNotify: true, NotifyURL: "http://x"} }), []string{"hi"}, nil},
		{"sessions", []string{"-c", "--fork", "s1", "--resume", "s2", "--mode", "plan", "--model", "m", "--set", "k=v"},
			with(func(f *RunFlags) {
				f.Continue, f.Fork, f.Resume, f.Mode, f.Model, f.Set = true, "s1", "s2", "plan", "m", []string{"k=v"}
			}), nil, nil},
	} {
		for _, cmd := range []string{"run", "chat", "acp"} {
			if cmd == "acp" && len(tc.wantArgs) > 0 {
				continue // acp takes no arguments
			}
			t.Run(cmd+"/"+tc.name, func(t *testing.T) {
				std, _, _ := testIO(nil)
				var got RunFlags
				var gotArgs []string
				runF := func(_ context.Context, o RunOptions, args []string) error {
					got, gotArgs = o.Flags, args
					if o.SetProcs == nil {
						t.Error("the command set no SetProcs")
					}
					return nil
				}
				g := &Globals{}
				c := map[string]func(IO, *Globals, RunFunc) *cobra.Command{"run": NewCmdRun, "chat": NewCmdChat, "acp": NewCmdACP}[cmd](std, g, runF)
				if err := execute(t, c, g, tc.args...); err != nil {
					t.Fatal(err)
				}
				for _, fl := range tc.changed {
					if !got.Changed(fl) {
						t.Errorf("--%s given but not Changed", fl)
					}
				}
				if got.Changed("mode") != (tc.name == "sessions") {
					t.Error("Changed reports a flag that was not given")
				}
				got.Changed = nil
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("options\n got %+v\nwant %+v", got, tc.want)
				}
				if len(gotArgs) != len(tc.wantArgs) || (len(gotArgs) > 0 && !reflect.DeepEqual(gotArgs, tc.wantArgs)) {
					t.Errorf("args %q, want %q", gotArgs, tc.wantArgs)
				}
			})
		}
	}
}

func TestACPTakesNoArguments(t *testing.T) {
	std, _, _ := testIO(nil)
	g := &Globals{}
	err := execute(t, NewCmdACP(std, g, func(context.Context, RunOptions, []string) error { t.Fatal("ran"); return nil }), g, "hi")
	if err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("err = %v", err)
	}
}

// A working directory that cannot be read is a usage error before the
// command runs.
func TestRunWorkdirFromIO(t *testing.T) {
	std, _, _ := testIO(nil)
	std.Getwd = func() (string, error) { return "", errors.New("gone") }
	g := &Globals{}
	err := execute(t, NewCmdRun(std, g, func(context.Context, RunOptions, []string) error { t.Fatal("ran"); return nil }), g, "hi")
	if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "working directory: gone") {
		t.Fatalf("err = %v", err)
	}
}

func TestFleetFlagsToOptions(t *testing.T) {
	def := FleetFlags{Output: OutputText, Sandbox: "auto"}
	with := func(edit func(*FleetFlags)) FleetFlags { f := def; edit(&f); return f }
	for _, tc := range []struct {
		name   string
		resume bool
		args   []string
		want   FleetFlags
		arg    string
	}{
		{"run defaults", false, []string{"plan.yaml"}, def, "plan.yaml"},
		{"run", false, []string{"-j", "8", "--fail-fast", "-o", "json", "--junit", "j.xml", "--run-id", "r1", "-C", "/repo", "-v", "p.yaml"},
			with(func(f *FleetFlags) {
				f.Concurrency, f.FailFast, f.Output, f.JUnit, f.RunID, f.Repo, f.Verbose = 8, true, OutputJSON, "j.xml", "r1", "/repo", true
			}), "p.yaml"},
		{"over NATS", false, []string{"--nats", "nats://h:4222", "--nats-creds", "c", "--nats-token-file", "t", "--remote", "origin", "--lease", "5s", "p.yaml"},
			with(func(f *FleetFlags) {
				f.NATS, f.Remote, f.Lease = NATSFlags{URL: "nats://h:4222", Creds: "c", TokenFile: "t"}, "origin", 5*time.Second
			}), "p.yaml"},
		{"feed and sandbox", false, []string{"--no-feed", "--listen", ":1", "--sandbox", "off", "--cancel-grace", "2s", "--sandbox-write", "/a", "--sandbox-write", "b", "p.yaml"},
			with(func(f *FleetFlags) {
				f.Feed, f.Sandbox, f.CancelGrace, f.SandboxWrite = FeedFlags{NoFeed: true, Listen: ":1"}, "off", 2*time.Second, []string{"/a", "b"}
			}), "p.yaml"},
		{"resume", true, []string{"-j", "2", "--sandbox-write", "/r", "fleet-1"}, with(func(f *FleetFlags) { f.Concurrency, f.SandboxWrite = 2, []string{"/r"} }), "fleet-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			std, _, _ := testIO(nil)
			var got FleetFlags
			var gotArg string
			runF := func(_ context.Context, f FleetFlags, arg string, _ IO) error { got, gotArg = f, arg; return nil }
			g := &Globals{}
			c := NewCmdFleetRun(std, g, runF)
			if tc.resume {
				c = NewCmdFleetResume(std, g, runF)
			}
			if err := execute(t, c, g, tc.args...); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) || gotArg != tc.arg {
				t.Errorf("options\n got %+v %q\nwant %+v %q", got, gotArg, tc.want, tc.arg)
			}
		})
	}
}

func TestWorkerAndHubFlagsToOptions(t *testing.T) {
	std, _, _ := testIO(nil)
	g := &Globals{}
	var w WorkerFlags
	c := NewCmdWorker(std, g, func(_ context.Context, f WorkerFlags, _ IO) error { w = f; return nil })
	if err := execute(t, c, g, "--nats", "nats://h", "--name", "w1", "--slots", "3", "--agents", "builtin,qwen", "--dir", "/d", "--lease", "1m", "--sandbox", "on", "--sandbox-write", "/out", "-v"); err != nil {
		t.Fatal(err)
	}
	want := WorkerFlags{NATS: NATSFlags{URL: "nats://h"}, Name: "w1", Slots: 3, Agents: []string{"builtin", "qwen"}, Dir: "/d", Lease: time.Minute, Sandbox: "on", SandboxWrite: []string{"/out"}, Verbose: true}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("worker\n got %+v\nwant %+v", w, want)
	}
	c = NewCmdWorker(std, g, func(_ context.Context, f WorkerFlags, _ IO) error { w = f; return nil })
	if err := execute(t, c, g); err != nil {
		t.Fatal(err)
	}
	if want := (WorkerFlags{Slots: 1, Agents: []string{"builtin"}, Sandbox: "auto"}); !reflect.DeepEqual(w, want) {
		t.Errorf("worker defaults\n got %+v\nwant %+v", w, want)
	}
	var h HubFlags
	c = NewCmdHub(std, g, func(_ context.Context, f HubFlags, _ IO) error { h = f; return nil })
	if err := execute(t, c, g, "--listen", ":0", "--store", "/s", "--token-file", "/t"); err != nil {
		t.Fatal(err)
	}
	if want := (HubFlags{Listen: ":0", Store: "/s", TokenFile: "/t"}); h != want {
		t.Errorf("hub %+v, want %+v", h, want)
	}
}

// The NATS credentials come from the injected environment when no file
// names them.
func TestNATSCredentialsFromIO(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/tok"
	if err := os.WriteFile(file, []byte(" from-file \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		n    NATSFlags
		env  map[string]string
		want string
		code exitcode.Code
	}{
		{"env", NATSFlags{}, map[string]string{"TAI_NATS_TOKEN": "from-env"}, "from-env", 0},
		{"none", NATSFlags{}, nil, "", 0},
		{"file wins", NATSFlags{TokenFile: file}, map[string]string{"TAI_NATS_TOKEN": "from-env"}, "from-file", 0},
		{"missing file", NATSFlags{TokenFile: dir + "/none"}, nil, "", exitcode.Usage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			std, _, _ := testIO(tc.env)
			got, err := tc.n.token(std)
			if got != tc.want || exitcode.Of(err) != tc.code {
				t.Fatalf("token %q, %v; want %q, exit %d", got, err, tc.want, tc.code)
			}
		})
	}
}

func TestAuditShowFlagsToOptions(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		want   audit.Filter
		asJSON bool
	}{
		{[]string{"log.jsonl"}, audit.Filter{}, false},
		{[]string{"--session", "s1", "--task", "a", "--kind", "permission,tool", "--json", "r1"}, audit.Filter{Session: "s1", Task: "a", Kinds: []string{"permission", "tool"}}, true},
		{[]string{"-o", "json", "r1"}, audit.Filter{}, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			std, _, _ := testIO(nil)
			var got audit.Filter
			var asJSON bool
			c := NewCmdAudit(std, func(_ string, f audit.Filter, j bool, _ IO) error { got, asJSON = f, j; return nil })
			g := &Globals{}
			root := &cobra.Command{Use: "tai", SilenceErrors: true, SilenceUsage: true}
			root.PersistentFlags().BoolVarP(&g.Verbose, "verbose", "v", false, "")
			root.AddCommand(c)
			root.SetArgs(append([]string{"audit", "show"}, tc.args...))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) || asJSON != tc.asJSON {
				t.Errorf("got %+v json=%v, want %+v json=%v", got, asJSON, tc.want, tc.asJSON)
			}
		})
	}
}

func TestSessionsFlagsToOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want SessionsFlags
	}{
		{nil, SessionsFlags{}},
		{[]string{"-a", "qwen"}, SessionsFlags{Agent: "qwen", Ask: true}},
		{[]string{"-a", "qwen", "--recorded", "-n", "3", "-q"}, SessionsFlags{Agent: "qwen", Limit: 3, IDOnly: true}},
		{[]string{"--agent-cmd", "x acp", "--all", "-o", "json", "-C", "/w"}, SessionsFlags{AgentCmd: "x acp", Ask: true, All: true, JSON: true, Cwd: "/w"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			std, _, _ := testIO(nil)
			var got SessionsFlags
			c := NewCmdSessions(std, func(_ context.Context, f SessionsFlags, _ IO) error { got = f; return nil })
			if err := execute(t, c, &Globals{}, tc.args...); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// -o takes only what the command prints.
func TestOutputFlagRefusesOthers(t *testing.T) {
	std, _, _ := testIO(nil)
	err := execute(t, NewCmdSessions(std, func(context.Context, SessionsFlags, IO) error { t.Fatal("ran"); return nil }), &Globals{}, "-o", "yaml")
	if exitcode.Of(err) != exitcode.Usage || err.Error() != `--output must be text or json, not "yaml"` {
		t.Fatalf("err = %v", err)
	}
}

// Commands return their errors and Report prints them, one prefix for
// each line; what a command already said is not said again.
func TestReport(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
		code int
	}{
		{"nil", nil, "", 0},
		{"plain", errors.New("boom"), "tai: boom (exit 1, agent_error)\n", 1},
		{"usage", exitcode.Usagef("--x is bad"), "tai: --x is bad (exit 2, usage)\n", 2},
		{"wrapped code", fmt.Errorf("worker: %w", exitcode.With(exitcode.NoSession, errors.New("gone"))), "tai: worker: gone (exit 4, no_session)\n", 4},
		{"said", exitcode.Said(exitcode.PermissionDenied), "", 5},
		{"exit", exit(0), "", 0},
		{"several", exitcode.With(exitcode.MergeConflict, errors.Join(errors.New("fleet: task a: merge conflict in x"), errors.New("fleet: task b failed: y"))),
			"tai: fleet: task a: merge conflict in x\ntai: fleet: task b failed: y (exit 7, merge_conflict)\n", 7},
		{"code 0 still says why", exitcode.With(exitcode.OK, errors.New("ended early")), "tai: ended early (exit 0, ok)\n", 0},
		{"code said once", exitcode.Usagef("bad (exit 2, usage)"), "tai: bad (exit 2, usage)\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if code := Report(&b, tc.err); code != tc.code || b.String() != tc.want {
				t.Fatalf("Report = %d %q, want %d %q", code, b.String(), tc.code, tc.want)
			}
		})
	}
}

// The commands that used to print their own errors return them.
func TestCommandsReturnErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		run  func(IO) error
		code exitcode.Code
		msg  string
	}{
		{"worker without nats", func(std IO) error { return Worker(ctx, WorkerFlags{}, std) }, exitcode.Usage, "worker: --nats URL is required"},
		{"hub token file", func(std IO) error { return Hub(ctx, HubFlags{TokenFile: dir + "/none"}, std) }, exitcode.Usage, "hub: --nats-token-file: "},
		{"fleet run no plan", func(std IO) error { return FleetRun(ctx, FleetFlags{}, dir+"/none.yaml", std) }, exitcode.Usage, "fleet run: "},
		{"fleet status no run", func(std IO) error { return FleetStatus(context.Background(), NATSFlags{}, "nosuch", false, std) }, exitcode.Usage, "fleet status: "},
		{"worktree list not a repo", func(std IO) error { return WorktreeList(ctx, WorktreeFlags{Repo: dir}, std) }, exitcode.Usage, "worktree list: "},
		{"worktree gc not a repo", func(std IO) error { return WorktreeGC(ctx, WorktreeFlags{Repo: dir}, std) }, exitcode.Usage, "worktree gc: "},
		{"top without a terminal", func(std IO) error { return Top(ctx, TopFlags{}, std) }, exitcode.Usage, "top needs a terminal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			std, out, errb := testIO(nil)
			err := tc.run(std)
			if exitcode.Of(err) != tc.code || err == nil || !strings.HasPrefix(err.Error(), tc.msg) {
				t.Fatalf("err = %v (exit %d), want exit %d %q…", err, exitcode.Of(err), tc.code, tc.msg)
			}
			if out.Len() > 0 || errb.Len() > 0 {
				t.Fatalf("printed: stdout %q stderr %q", out, errb)
			}
		})
	}
}
