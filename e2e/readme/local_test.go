package readme_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

// The README's first command, in the repository's root as a reader who
// cloned it runs it: it builds tai (./tai, which .gitignore ignores) and
// runs the built-in agent's tour in a new temporary directory with every
// request allowed (--approve all, as the README writes it). The run's audit log shows the tour's two writes, its
// read and its command, all allowed.
func TestFirstCommand(t *testing.T) {
	u := newUser(t)
	o := u.must(repoRoot, readme(`go build -o tai ./cmd/tai && ./tai run -C "$(mktemp -d)" --approve all "show me what you can do"`))
	logs := listing(u.state("audit"), ".jsonl")
	if len(logs) != 1 {
		t.Fatalf("want one run's audit log, got %v\n%s", logs, o)
	}
	var id string
	for id = range logs {
	}
	kinds := map[string]int{}
	var denied []string
	for _, e := range auditlog.Read(t, u.state("audit", id+".jsonl")) {
		kinds[e.Kind]++
		if e.Kind == audit.KindPermissionDecision && strings.Contains(string(e.Data), `"verdict":"deny"`) {
			denied = append(denied, string(e.Data))
		}
	}
	if kinds["file.write"] < 2 || kinds["terminal.exit"]+kinds["terminal.create"] < 1 || len(denied) > 0 {
		t.Errorf("the tour did not write two files and run a command, all allowed: kinds %v, denied %v\n%s", kinds, denied, o)
	}
	if !strings.Contains(o.stdout, "terminal-ok") {
		t.Errorf("the tour's command output is not shown:\n%s", o)
	}
}

// tai agents lists the presets, the built-in agent installed; tai doctor
// and tai version (shown inline in the README) answer on a fresh HOME.
func TestAgentsDoctorVersion(t *testing.T) {
	u := newUser(t)
	o := u.must(u.home, readme(`tai agents`))
	rows := map[string]string{}
	for _, l := range strings.Split(o.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = l
		}
	}
	for _, p := range []string{"builtin", "claude", "codex", "gemini", "qwen", "opencode", "copilot"} {
		if rows[p] == "" {
			t.Errorf("tai agents does not list the preset %s:\n%s", p, o)
		}
	}
	if !strings.Contains(rows["builtin"], "yes") {
		t.Errorf("tai agents does not say the built-in agent is installed: %q", rows["builtin"])
	}

	o = u.must(u.home, readme(`tai doctor`))
	for _, want := range []string{"Landlock", "Processes:", "Limits:"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("tai doctor does not say %q:\n%s", want, o)
		}
	}
	o = u.must(u.home, readme(`tai version`))
	if !strings.Contains(o.stdout, "github.com/tai-dev/tai") && !strings.Contains(o.stdout, "tai") {
		t.Errorf("tai version:\n%s", o)
	}
}

// A run with the feed on TCP, the default agent and policy: the feed's URL
// and bearer token are on stderr, and the tour's writes and command are
// denied by approve-reads, so tai exits 5 (the README's first section).
// Then the README's audit and session commands, on that run.
func TestRunAuditSessions(t *testing.T) {
	u := newUser(t)
	ws := u.repo("proj")
	before := listing(u.state("audit"), ".jsonl")
	// 127.0.0.1:0, not :7777: a port that may be taken on the test
	// machine; 0 picks a free one, and tai prints the one it got.
	o := u.sh(ws, readme(`tai run --listen 127.0.0.1:7777 "..."`), "127.0.0.1:7777", "127.0.0.1:0")
	if o.code != 5 {
		t.Fatalf("the default policy denies the tour's writes: want exit 5\n%s", o)
	}
	if !regexp.MustCompile(`http://127\.0\.0\.1:[1-9][0-9]*.*Bearer [0-9a-f]{16,}`).MatchString(o.stderr) {
		t.Errorf("the feed's URL and bearer token are not on stderr:\n%s", o)
	}
	run := added(t, u.state("audit"), ".jsonl", before)
	logPath := u.state("audit", run+".jsonl")
	entries := auditlog.Read(t, logPath)
	start, ok := auditlog.First(entries, audit.KindSessionStart)
	if !ok || start.Session == "" {
		t.Fatalf("no session.start in %s", logPath)
	}
	session := start.Session

	// verify: by path and by run id, head hash printed; --complete -o json.
	verifyPath := readme(`tai audit verify ~/.local/state/tai/audit/run-20261130-162447-e9495a.jsonl`)
	o = u.must(ws, verifyPath, "run-20261130-162447-e9495a", run)
	headRe := regexp.MustCompile(`head ([0-9a-f]{64})`)
	m := headRe.FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("verify does not print the head hash whole:\n%s", o)
	}
	o = u.must(ws, readme(`tai audit verify run-20261130-162447-e9495a`), "run-20261130-162447-e9495a", run)
	if !strings.Contains(o.stdout, m[1]) {
		t.Errorf("verify by run id does not print the head hash %s:\n%s", m[1], o)
	}
	o = u.must(ws, readme(`tai audit verify --complete -o json run-20261130-162447-e9495a`), "run-20261130-162447-e9495a", run)
	if !json.Valid([]byte(o.stdout)) {
		t.Errorf("verify -o json is not JSON:\n%s", o)
	}
	// "non-zero, naming the line, if tampered": the same line on a copy
	// with one entry edited.
	tampered := filepath.Join(u.state("audit"), "run-20261130-162447-e9495a.jsonl")
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines[2] = strings.Replace(lines[2], `"seq":3`, `"seq":3,"x":1`, 1)
	if err := os.WriteFile(tampered, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	o = u.sh(ws, verifyPath)
	if o.code == 0 || !strings.Contains(o.stdout+o.stderr, "line 3") {
		t.Errorf("verify of a tampered log: want non-zero naming line 3\n%s", o)
	}
	os.Remove(tampered)

	o = u.must(ws, readme(`tai audit show --kind permission --session 4d37a8dc FILE|RUN_ID`), "4d37a8dc", session, "FILE|RUN_ID", run)
	if !strings.Contains(o.stdout, "deny") {
		t.Errorf("audit show --kind permission lacks the tour's denials:\n%s", o)
	}

	// Sessions: the run's session is listed, forked, removed.
	o = u.must(ws, readme(`tai sessions --agent builtin`))
	if !strings.Contains(o.stdout, session) {
		t.Errorf("tai sessions --agent builtin does not list %s:\n%s", session, o)
	}
	before = listing(u.state("audit"), ".jsonl")
	o = u.sh(ws, readme(`tai run --agent builtin --fork builtin-0123456789abcdef "try it the other way"`), "builtin-0123456789abcdef", session)
	if o.code != 5 {
		t.Errorf("a fork plays the tour under the default policy: want exit 5\n%s", o)
	}
	fork := added(t, u.state("audit"), ".jsonl", before)
	if fs, ok := auditlog.First(auditlog.Read(t, u.state("audit", fork+".jsonl")), audit.KindSessionStart); !ok || fs.Session == "" || fs.Session == session {
		t.Errorf("the fork did not start a session of its own: %+v", fs)
	}
	u.must(ws, readme(`tai sessions rm builtin-0123456789abcdef --agent builtin`), "builtin-0123456789abcdef", session)
	o = u.must(ws, "tai sessions --agent builtin")
	if strings.Contains(o.stdout, session) {
		t.Errorf("tai sessions still lists the removed %s:\n%s", session, o)
	}
}

// tai top --once draws one frame of the live runs, fitting the width.
func TestTopOnce(t *testing.T) {
	u := newUser(t)
	ws := u.repo("proj")
	// A live run to show: the built-in agent says hello, then hangs until
	// it is stopped. Its first frame says the run (and its feed) is up.
	writeFile(t, filepath.Join(u.home, "hang.yaml"), "steps:\n  - text: waiting\n  - hang: true\n")
	live := u.start(ws, "tai run --agent-cmd 'tai agent builtin --script ../hang.yaml' -o stream-json go")
	sc := bufio.NewScanner(live.Stdout)
	up := false
	for !up && sc.Scan() {
		up = strings.Contains(sc.Text(), `"text":"waiting"`)
	}
	if !up {
		t.Fatalf("the live run did not start; stderr:\n%s", live.Stderr.String())
	}
	o := u.must(u.home, readme(`tai top --once --width 100`))
	if !strings.Contains(o.stdout, "1 run") {
		t.Errorf("tai top --once does not show the live run:\n%s", o)
	}
	for _, l := range strings.Split(o.stdout, "\n") {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("a row of %d columns, wider than --width 100: %q", n, l)
		}
	}
}

// tai config show (shown inline in the README) on a fresh HOME: every
// setting is the default and it says which file it looked for; once the
// user writes their config file, the value is shown with that file.
func TestConfigShow(t *testing.T) {
	u := newUser(t)
	o := u.must(u.home, "tai config show")
	userFile := filepath.Join(u.home, ".config", "tai", "config.toml")
	if !strings.Contains(o.stdout, "no config file (looked for "+userFile) {
		t.Errorf("config show does not say it looked for %s:\n%s", userFile, o)
	}
	rows := 0
	for _, l := range strings.Split(o.stdout, "\n") {
		if strings.HasPrefix(l, "defaults.") {
			rows++
			if !strings.HasSuffix(l, "(default)") {
				t.Errorf("on a fresh HOME, %q is not the default", l)
			}
		}
	}
	if rows == 0 {
		t.Errorf("config show lists no setting:\n%s", o)
	}

	// The output default, not a policy setting: the file's effect is the subject.
	writeFile(t, userFile, "[defaults]\noutput = \"json\"\n")
	o = u.must(u.home, "tai config show")
	if !regexp.MustCompile(`(?m)^defaults\.output +json +` + regexp.QuoteMeta(userFile) + `$`).MatchString(o.stdout) {
		t.Errorf("config show does not give defaults.output json from %s:\n%s", userFile, o)
	}
}
