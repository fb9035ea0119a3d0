package realagents

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
)

// readme marks a command line copied from the README exactly;
// e2e/readme's TestREADMECommandsCovered counts it as run.
func readme(line string) string { return line }

// readmeCase is a README line that needs a real agent, run as written
// with `sh -c` in the world's repository: tai and the agent's installed
// executable first on PATH (a user who installed them), the harness's
// HOME, settings and model server, nothing else.
type readmeCase struct {
	agent  string
	line   string
	subs   []string // placeholder, value pairs
	script string   // the model's, under modelserver/testdata/scripts
	// editor: the line is an ACP agent, run by acpx (an editor's
	// stand-in) with this prompt, approving what it is asked.
	editor string
	// claudeCLI: the line runs the claude CLI (the stream-json driver),
	// which is put on PATH too.
	claudeCLI bool
	// tty: the line runs on a terminal (tmux), which this drives as a
	// user would; the outcome is its exit code.
	tty func(t *testing.T, term *terminal)
	// env is more of the environment, each entry saying why.
	env   []string
	setup func(t *testing.T, w *world)
	check func(t *testing.T, w *world, o outcome)
}

// readmeCases are the README's own lines, run as written: their --approve,
// --ask, --deny and --mode policy is the README's.
var readmeCases = []readmeCase{
	{
		agent: "qwen", line: readme(`tai run --agent qwen --approve all "add a README"`), script: "write.json",
		check: func(t *testing.T, w *world, o outcome) { wantExit(t, o, 0); wantFile(t, w, "hello.txt", "hello\n") },
	},
	{
		agent: "qwen", line: readme(`tai run --agent qwen --approve all --ask 'execute:git push*' --deny 'edit,read:**/.env' "ship it"`), script: "write.json",
		// The write is not a push nor a .env: --approve all allows it.
		check: func(t *testing.T, w *world, o outcome) { wantExit(t, o, 0); wantFile(t, w, "hello.txt", "hello\n") },
	},
	{
		agent: "gemini", line: readme(`tai run --agent gemini --model gemini-2.5-flash --file src/main.go "review this file"`), script: "text.json",
		setup: func(t *testing.T, w *world) {
			writeFile(t, filepath.Join(w.repo, "src", "main.go"), "package main\n\nfunc main() {}\n")
		},
		check: func(t *testing.T, w *world, o outcome) {
			wantExit(t, o, 0)
			wantReply(t, o)
			// --model reached gemini (as -m: it has no model option over ACP).
			if !strings.Contains(string(mustRead(t, w.mlog)), `"model":"gemini-2.5-flash"`) {
				t.Errorf("the model requests do not name gemini-2.5-flash")
			}
		},
	},
	{
		agent: "codex", line: readme(`echo "explain this repo" | tai run --agent codex -`), script: "text.json",
		check: func(t *testing.T, w *world, o outcome) {
			wantExit(t, o, 0)
			wantReply(t, o)
			if !strings.Contains(string(mustRead(t, w.mlog)), "explain this repo") {
				t.Errorf("the prompt read from stdin did not reach the model")
			}
		},
	},
	{
		agent: "claude", line: readme(`tai run --agent claude --mode plan "how would you split this module?"`), script: "text.json",
		check: func(t *testing.T, w *world, o outcome) { wantExit(t, o, 0); wantReply(t, o) },
	},
	{
		agent: "codex", line: readme(`printf 'first\nsecond\n' | tai chat --agent codex -o json`), script: "text.json",
		check: func(t *testing.T, w *world, o outcome) {
			wantExit(t, o, 0)
			// One JSON result for the session; both lines reached the model.
			var r result
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
				t.Errorf("stdout is not a JSON result (%v):\n%s", err, o.stdout)
			}
			log := string(mustRead(t, w.mlog))
			for _, p := range []string{"first", "second"} {
				if !strings.Contains(log, p) {
					t.Errorf("the turn %q did not reach the model", p)
				}
			}
		},
	},
	{
		agent: "qwen", line: readme(`tai run --agent qwen --driver pty "add a README"`), script: "text.json",
		check: func(t *testing.T, w *world, o outcome) { wantExit(t, o, 0); wantReply(t, o) },
	},
	{
		// opencode asks before a write (the harness's settings); tai's
		// default policy leaves the ask open, so it goes to the editor,
		// which approves it.
		agent: "opencode", line: readme(`tai acp --agent-cmd 'opencode acp'`), script: "write.json", editor: "create hello.txt",
		check: func(t *testing.T, w *world, o outcome) {
			wantExit(t, o, 0)
			wantFile(t, w, "hello.txt", "hello\n")
			wantDecidedByHuman(t, w)
		},
	},
	{
		// A project that depends on claude-agent-acp (its package.json and
		// node_modules, the installed release): npx runs it from there.
		agent: "claude", line: readme(`tai run --agent-cmd 'npx -y @agentclientprotocol/claude-agent-acp' --output json "fix the failing test"`),
		script: "text.json",
		// Offline: npx must not ask the registry (the tests have no network).
		env: []string{"npm_config_offline=true", "npm_config_update_notifier=false"},
		setup: func(t *testing.T, w *world) {
			pkg := filepath.Dir(filepath.Dir(filepath.Dir(w.exe))) // <install>/node_modules/.bin/claude-agent-acp
			writeFile(t, filepath.Join(w.repo, "package.json"), string(mustRead(t, filepath.Join(pkg, "package.json"))))
			if err := os.Symlink(filepath.Join(pkg, "node_modules"), filepath.Join(w.repo, "node_modules")); err != nil {
				t.Fatal(err)
			}
		},
		check: func(t *testing.T, w *world, o outcome) {
			wantExit(t, o, 0)
			var r result
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || !strings.Contains(r.Message, "Hello from the scripted model.") {
				t.Errorf("want one JSON result with the model's reply (%v):\n%s", err, o.stdout)
			}
		},
	},
	{
		agent: "claude", line: readme(`tai run --agent claude --driver stream-json "fix the test"`), script: "text.json", claudeCLI: true,
		check: func(t *testing.T, w *world, o outcome) { wantExit(t, o, 0); wantReply(t, o) },
	},
	{
		// The CLI's Write asks (can_use_tool); tai's default policy leaves
		// it open, so the editor answers it.
		agent: "claude", line: readme(`tai acp --agent claude --driver stream-json`), script: "write.json", claudeCLI: true, editor: "create hello.txt",
		check: func(t *testing.T, w *world, o outcome) {
			wantExit(t, o, 0)
			wantFile(t, w, "hello.txt", "hello\n")
			wantDecidedByHuman(t, w)
		},
	},
	{
		agent: "qwen", line: readme(`tai acp --agent qwen --driver pty`), script: "write.json", editor: "create hello.txt",
		check: func(t *testing.T, w *world, o outcome) {
			wantExit(t, o, 0)
			wantFile(t, w, "hello.txt", "hello\n")
			wantDecidedByHuman(t, w)
		},
	},
}

// TestREADMERealAgents runs the README's real-agent lines as written.
func TestREADMERealAgents(t *testing.T) {
	need(t)
	for _, c := range readmeCases {
		t.Run(c.line, func(t *testing.T) { runREADMECase(t, c) })
	}
}

// runREADMECase runs one README line as written and checks it.
func runREADMECase(t *testing.T, c readmeCase) {
	t.Helper()
	var a agent
	for _, x := range agents {
		if x.name == c.agent {
			a = x
		}
	}
	exe, _ := a.installed(t)
	w := newWorld(t, a, exe, "readme", modelScript(t, c.script))
	if c.setup != nil {
		c.setup(t, w)
	}
	bin := filepath.Join(w.dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"tai": taiBin, filepath.Base(exe): exe}
	if c.claudeCLI {
		links["claude"] = claudeCLI(t)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := append(withPath(w.env, bin), c.env...)
	line := c.line
	for i := 0; i+1 < len(c.subs); i += 2 {
		line = strings.ReplaceAll(line, c.subs[i], c.subs[i+1])
	}
	var o build.Outcome
	if c.tty != nil {
		term := startTerminal(t, w.repo, env, line)
		c.tty(t, term)
		o.Code = term.exitCode(t)
	} else if c.editor == "" {
		o = build.Run(t, "/bin/sh", w.repo, env, "-c", line)
	} else {
		o = build.Run(t, acpxBin(t), w.repo, env, "--agent", line, "--cwd", w.repo, "--no-fs",
			"--permission-policy", `{"defaultAction":"approve"}`, "--format", "text", "exec", c.editor)
	}
	w.lastStderr = o.Stderr
	c.check(t, w, outcome{o.Stdout, o.Stderr, o.Code})
}

// withPath puts dir first on env's (last) PATH.
func withPath(env []string, dir string) []string {
	path := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return append(append([]string(nil), env...), "PATH="+dir+string(os.PathListSeparator)+path)
}

func wantExit(t *testing.T, o outcome, code int) {
	t.Helper()
	if o.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", o.code, code, o.stdout, tail(o.stderr, 4000))
	}
}

func wantFile(t *testing.T, w *world, name, body string) {
	t.Helper()
	if got, err := os.ReadFile(filepath.Join(w.repo, name)); err != nil || string(got) != body {
		t.Errorf("%s: %q, %v; want %q", name, got, err, body)
	}
}

func wantReply(t *testing.T, o outcome) {
	t.Helper()
	if !strings.Contains(o.stdout, "Hello from the scripted model.") {
		t.Errorf("the model's reply is not in the output:\n%s", o.stdout)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// acpxVersion is the pinned acpx (scripts/install-peers.sh).
const acpxVersion = "0.19.1"

// acpxBin is the installed acpx: missing, the test skips, or fails in CI.
func acpxBin(t *testing.T) string {
	t.Helper()
	p := os.Getenv("TAI_ACPX")
	if p == "" {
		home, _ := os.UserHomeDir()
		p = filepath.Join(home, ".cache", "tai-peers", "acpx-"+acpxVersion, "node_modules", ".bin", "acpx")
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("acpx %s is missing (%v): run scripts/install-peers.sh", acpxVersion, err)
		}
		t.Skipf("acpx %s is missing (%v): run scripts/install-peers.sh", acpxVersion, err)
	}
	return p
}

// wantDecidedByHuman: tai's audit log (the user's state directory) has a
// permission allowed by the human, who answered in the editor.
func wantDecidedByHuman(t *testing.T, w *world) {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(w.home, ".local", "state", "tai", "audit", "*.jsonl"))
	for _, l := range logs {
		if b, _ := os.ReadFile(l); strings.Contains(string(b), `"decided_by":"human"`) {
			return
		}
	}
	t.Errorf("no permission decided by the human (the editor) in the audit logs %v", logs)
}

// claudeCLIVersion is the pinned Claude Code CLI (scripts/install-claude.sh).
const claudeCLIVersion = "2.1.332"

// claudeCLI is the installed claude CLI: missing, the test skips, or
// fails in CI.
func claudeCLI(t *testing.T) string {
	t.Helper()
	p := os.Getenv("TAI_CLAUDE_CLI")
	if p == "" {
		dir := os.Getenv("TAI_AGENTS_DIR")
		if dir == "" {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".cache", "tai-agents")
		}
		p = filepath.Join(dir, "claude-code-"+claudeCLIVersion, "node_modules", ".bin", "claude")
	}
	if _, err := os.Stat(p); err != nil {
		why := fmt.Sprintf("the claude CLI is missing (%v): run eval \"$(scripts/install-claude.sh | sed 's/^/export /')\"", err)
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	return p
}

// chatCase is the README's `tai chat --agent qwen --approve ask` at a
// terminal, not in readmeCases until tai keeps the next key after a
// question answered at the terminal (e2e/readme's pending says why);
// TestREADMEChatAfterAsk runs it and skips saying so.
var chatCase = readmeCase{
	// At a terminal: a turn typed, its write asked and allowed with y,
	// the session ended with Ctrl-D.
	agent: "qwen", line: readme(`tai chat --agent qwen --approve ask`), script: "write.json",
	tty: func(t *testing.T, term *terminal) {
		term.wait(t, "session")
		term.keys(t, "create hello.txt", "Enter")
		term.wait(t, "allow once")
		term.keys(t, "y")
		term.wait(t, "Created hello.txt.")
		// Ctrl-D at the next prompt: typed during the turn, the line
		// editor would not see it.
		term.waitFor(t, "the prompt after the turn", func(s string) bool {
			_, after, ok := strings.Cut(s, "turn ended")
			return ok && strings.HasSuffix(strings.TrimSpace(after), "tai›")
		})
		term.keys(t, "C-d")
		term.ended = time.Now()
	},
	check: func(t *testing.T, w *world, o outcome) { wantExit(t, o, 0); wantFile(t, w, "hello.txt", "hello\n") },
}

// TestREADMEChatAfterAsk: see chatCase.
func TestREADMEChatAfterAsk(t *testing.T) {
	need(t)
	runREADMECase(t, chatCase)
}

// terminal is a command line running in a tmux pane.
type terminal struct {
	sock string
	// ended is when the test ended the session, to report how long the
	// command took to exit after it.
	ended time.Time
}

// startTerminal runs line with sh in dir on a 200x50 tmux terminal with
// env; the pane stays after it ends, showing its exit code.
func startTerminal(t *testing.T, dir string, env []string, line string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed but CI is set")
		}
		t.Skip("tmux is not installed")
	}
	// A short directory: a socket's path has a length limit.
	sockDir, err := os.MkdirTemp("", "tmx")
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{sock: filepath.Join(sockDir, "s")}
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", term.sock, "kill-server").Run()
		os.RemoveAll(sockDir)
	})
	cmd := exec.Command("tmux", "-S", term.sock, "new-session", "-d", "-s", "e2e", "-x", "200", "-y", "50", "-c", dir,
		"sh -c '"+strings.ReplaceAll(line, "'", `'\''`)+"; echo TERM-EXIT=$?; sleep 3600'")
	cmd.Env = append(env, "TERM=xterm-256color")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	return term
}

func (x *terminal) screen(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("tmux", "-S", x.sock, "capture-pane", "-p", "-S", "-200", "-t", "e2e").CombinedOutput()
	if err != nil {
		t.Fatalf("tmux capture-pane: %v\n%s", err, out)
	}
	return string(out)
}

// wait polls the screen until it shows want. The bound only stops a hung
// test; nothing asserts on time.
func (x *terminal) wait(t *testing.T, want string) string {
	t.Helper()
	return x.waitFor(t, fmt.Sprintf("%q", want), func(s string) bool { return strings.Contains(s, want) })
}

// waitFor polls the screen until ok says it shows what is awaited.
func (x *terminal) waitFor(t *testing.T, what string, ok func(screen string) bool) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		s := x.screen(t)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %s; it shows:\n%s", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (x *terminal) keys(t *testing.T, keys ...string) {
	t.Helper()
	if out, err := exec.Command("tmux", append([]string{"-S", x.sock, "send-keys", "-t", "e2e"}, keys...)...).CombinedOutput(); err != nil {
		t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
}

var termExit = regexp.MustCompile(`TERM-EXIT=([0-9]+)`)

// exitCode waits for the command's end and returns its exit code.
func (x *terminal) exitCode(t *testing.T) int {
	t.Helper()
	m := termExit.FindStringSubmatch(x.wait(t, "TERM-EXIT="))
	n, _ := strconv.Atoi(m[1])
	if !x.ended.IsZero() {
		t.Logf("the command exited %v after the session was ended", time.Since(x.ended).Round(time.Second))
	}
	return n
}
