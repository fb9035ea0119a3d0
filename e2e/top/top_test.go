// Package top_test drives the real tai in a real terminal (tmux): a fleet
// of built-in agents that ask in one pane, tai top in another answering.
package top_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
)

var taiBin string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-top-", func(_ string, bins []string) { taiBin = bins[0] }, build.Tai)
}

type tmux struct {
	t    *testing.T
	sock string
}

func (x tmux) run(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", x.sock}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (x tmux) screen(pane string) string { return x.run("capture-pane", "-p", "-t", pane) }

// wait polls the pane until it shows want. The bound only stops a hung
// test; nothing asserts on time.
func (x tmux) wait(pane, want string) string {
	x.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		s := x.screen(pane)
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			o, _ := exec.Command("tmux", "-S", x.sock, "capture-pane", "-p", "-t", other(pane)).CombinedOutput() // there may be no other pane
			x.t.Fatalf("pane %s never showed %q; it shows:\n%s\nthe other pane:\n%s", pane, want, s, o)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func other(p string) string {
	if strings.HasSuffix(p, ".0") {
		return strings.TrimSuffix(p, "0") + "1"
	}
	return strings.TrimSuffix(p, "1") + "0"
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A fleet asks in its terminal; tai top, in another pane, peeks at the
// first ask and allows it; the second is denied at the fleet's own
// terminal. The agent that was allowed wrote its file, the other did not,
// and the audit log records the human and the channel of each.
func TestTopAnswersAFleetAsk(t *testing.T) {
	tmp, state, repo := setup(t)
	// policy approve: ask (reads allowed): the asks tai top answers are the subject.
	write(t, filepath.Join(tmp, "plan.yaml"), `name: asks
goal: two tasks that ask before writing
policy: {approve: ask, allow: ["read"]}
concurrency: 1
tasks:
  - {id: alpha, script: alpha.yaml, prompt: write alpha.txt}
  - {id: beta, script: beta.yaml, prompt: write beta.txt}
`)
	for _, n := range []string{"alpha", "beta"} {
		write(t, filepath.Join(tmp, n+".yaml"), fmt.Sprintf("steps:\n  - write: {path: %s.txt, content: \"%s\\n\"}\n  - text: \"%s done\"\n", n, n, n))
	}
	env := env(tmp)
	x := tmux{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	x.run("new-session", "-d", "-s", "e2e", "-x", "160", "-y", "40",
		fmt.Sprintf("%s %s fleet run --run-id asks -C %s %s; echo FLEET-EXIT=$?; sleep 3600", env, taiBin, repo, filepath.Join(tmp, "plan.yaml")))
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", x.sock, "kill-server").Run() })
	x.run("split-window", "-t", "e2e", "-v", fmt.Sprintf("%s %s top; echo TOP-EXIT=$?; sleep 3600", env, taiBin))
	fleetPane, topPane := "e2e.0", "e2e.1"

	// The first ask is on the fleet's terminal and in tai top's queue.
	x.wait(fleetPane, "[y] allow once")
	// Not "ASK": the table's TASK heading has it.
	x.wait(topPane, "1 waiting for you")
	x.run("send-keys", "-t", topPane, "Enter")
	peek := x.wait(topPane, "Options")
	// Either task may ask first: tai top answers that one, the terminal the other.
	m := regexp.MustCompile(`task (alpha|beta) of asks`).FindStringSubmatch(peek)
	if m == nil {
		t.Fatalf("the peek does not say whose ask it is:\n%s", peek)
	}
	first, second := m[1], map[string]string{"alpha": "beta", "beta": "alpha"}[m[1]]
	for _, want := range []string{"Write " + first + ".txt", "[edit]", "Allow (allow_once)", "mode ask asks for every request", "+" + first} {
		if !strings.Contains(peek, want) {
			t.Errorf("the peek lacks %q:\n%s", want, peek)
		}
	}
	x.run("send-keys", "-t", topPane, "y")
	// The fleet's terminal sees it answered, and asks the next.
	x.wait(fleetPane, "(answered via dashboard: allow once)")
	x.wait(fleetPane, "Write "+second+".txt")
	x.wait(topPane, "Write "+second+".txt")
	x.run("send-keys", "-t", fleetPane, "n", "Enter")
	x.wait(fleetPane, "FLEET-EXIT=")

	// Who decided what, and what the agents did with it.
	var st struct {
		Target string
		Tasks  map[string]struct {
			SessionID string `json:"session_id"`
			Status    string
		}
	}
	b, err := os.ReadFile(filepath.Join(state, "tai", "fleet", "asks", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	task := map[string]string{}
	for id, ts := range st.Tasks {
		task[ts.SessionID] = id
	}
	f, err := os.Open(filepath.Join(state, "tai", "fleet", "asks", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e struct {
			Kind    string
			Session string
			Data    struct {
				Decision, Option, Via string
				DecidedBy             string `json:"decided_by"`
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if e.Kind == "permission.decision" && e.Data.DecidedBy == "human" {
			got[task[e.Session]] = fmt.Sprintf("%s %s via %s", e.Data.Decision, e.Data.Option, e.Data.Via)
		}
	}
	want := map[string]string{first: "allow allow-once (allow_once) via dashboard", second: "deny reject-once (reject_once) via terminal"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("human decisions %v, want %v", got, want)
	}
	if out := git(t, repo, "show", st.Target+":"+first+".txt"); out != first {
		t.Fatalf("%s.txt on %s: %q", first, st.Target, out)
	}
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", st.Target+":"+second+".txt").Run(); err == nil {
		t.Fatalf("%s wrote its file although its write was denied", second)
	}
	// The run is over: its socket is gone and tai top shows nothing running.
	x.wait(topPane, "no tai is running")
	x.run("send-keys", "-t", topPane, "q")
	x.wait(topPane, "TOP-EXIT=0")
}

// setup makes the test's state and runtime directories and a repository.
func setup(t *testing.T) (tmp, state, repo string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed but CI is set (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
	tmp = t.TempDir()
	state, repo = filepath.Join(tmp, "state"), filepath.Join(tmp, "repo")
	for _, d := range []string{state, filepath.Join(tmp, "rt"), repo} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		git(t, repo, a...)
	}
	write(t, filepath.Join(repo, "README"), "hi\n")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "init")
	return tmp, state, repo
}

// env is the panes' environment.
func env(tmp string) string {
	return fmt.Sprintf("env XDG_STATE_HOME=%s XDG_RUNTIME_DIR=%s NO_COLOR=1 TERM=xterm-256color", filepath.Join(tmp, "state"), filepath.Join(tmp, "rt"))
}

// A fleet task's question nobody else could answer waits at the fleet's
// terminal and in tai top: a typed answer in tai top reaches the agent.
func TestTopAnswersAFleetQuestion(t *testing.T) {
	tmp, state, repo := setup(t)
	// policy approve: all: only the task's question should wait; answering it is the subject.
	write(t, filepath.Join(tmp, "plan.yaml"), "name: q\ngoal: a question\npolicy: {approve: all}\ntasks:\n  - {id: license, script: q.yaml, prompt: add a license}\n")
	write(t, filepath.Join(tmp, "q.yaml"), "steps:\n  - text: \"Which license should I use, MIT or Apache-2.0?\"\n")
	x := tmux{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	x.run("new-session", "-d", "-s", "e2e", "-x", "160", "-y", "40",
		fmt.Sprintf("%s %s fleet run --run-id q -C %s %s; echo FLEET-EXIT=$?; sleep 3600", env(tmp), taiBin, repo, filepath.Join(tmp, "plan.yaml")))
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", x.sock, "kill-server").Run() })
	x.run("split-window", "-t", "e2e", "-v", fmt.Sprintf("%s %s top; echo TOP-EXIT=$?; sleep 3600", env(tmp), taiBin))
	fleetPane, topPane := "e2e.0", "e2e.1"
	x.wait(fleetPane, "your answer (empty = leave it blocked)")
	x.wait(topPane, "QUESTION")
	x.run("send-keys", "-t", topPane, "Enter")
	x.wait(topPane, "answer: █")
	x.run("send-keys", "-t", topPane, "-l", "MIT please")
	x.wait(topPane, "answer: MIT please█")
	x.run("send-keys", "-t", topPane, "Enter")
	x.wait(fleetPane, "(answered via dashboard)")
	// The agent got the answer: its next turn's prompt carries it. It
	// asks again (its script has nothing else); an empty answer at the
	// terminal leaves it blocked, and the fleet ends.
	x.wait(fleetPane, "license answered: human: MIT please")
	x.wait(fleetPane, "your answer (empty = leave it blocked)")
	x.run("send-keys", "-t", fleetPane, "Enter")
	x.wait(fleetPane, "FLEET-EXIT=")
	b, err := os.ReadFile(filepath.Join(state, "tai", "fleet", "q", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Answer (from the human):\\nMIT please") {
		t.Fatalf("the agent's next prompt lacks the answer:\n%s", b)
	}
}

// A run elicits a form and then a URL; tai top, in another pane, shows
// each as ELICIT, peeks at the form's fields, fills them in and accepts,
// then declines the URL. The agent got the values, and the result and the
// audit log record a human via the dashboard.
func TestTopAnswersAnElicitation(t *testing.T) {
	tmp, _, _ := setup(t)
	work := filepath.Join(tmp, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tmp, "elicit.yaml"), `steps:
  - elicit_form:
      message: "Which database should I migrate?"
      schema:
        properties:
          database: {type: string, title: Database, enum: [dev, staging, prod], default: dev}
          port: {type: integer, title: Port, minimum: 1, maximum: 65535}
          password: {type: string, title: Password, format: password}
        required: [database, port]
  - elicit_url:
      message: "Log in to the registry"
      url: "https://auth.example.com/device"
`)
	result, auditPath := filepath.Join(tmp, "result.json"), filepath.Join(tmp, "audit.jsonl")
	x := tmux{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	x.run("new-session", "-d", "-s", "e2e", "-x", "160", "-y", "40",
		fmt.Sprintf("cd %s && %s %s run --no-notify --audit %s -o json --agent-cmd '%s agent builtin --script %s' go > %s; echo RUN-EXIT=$?; sleep 3600",
			work, env(tmp), taiBin, auditPath, taiBin, filepath.Join(tmp, "elicit.yaml"), result))
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", x.sock, "kill-server").Run() })
	x.run("split-window", "-t", "e2e", "-v", fmt.Sprintf("%s %s top; echo TOP-EXIT=$?; sleep 3600", env(tmp), taiBin))
	runPane, topPane := "e2e.0", "e2e.1"

	x.wait(runPane, "Database")
	x.wait(topPane, "ELICIT")
	x.run("send-keys", "-t", topPane, "Enter")
	peek := x.wait(topPane, "Form")
	for _, want := range []string{"Which database should I migrate?", "Database [database] (one of, required, default dev)", "1) dev  2) staging  3) prod",
		"Port [port] (integer, required, min 1, max 65535)", "Password [password] (string, password, secret)"} {
		if !strings.Contains(peek, want) {
			t.Errorf("the peek lacks %q:\n%s", want, peek)
		}
	}
	x.run("send-keys", "-t", topPane, "-l", "2")
	x.run("send-keys", "-t", topPane, "Tab")
	x.run("send-keys", "-t", topPane, "-l", "5432")
	x.run("send-keys", "-t", topPane, "Tab")
	x.run("send-keys", "-t", topPane, "-l", "s3cret-top")
	x.wait(topPane, "••••••••••█")
	x.run("send-keys", "-t", topPane, "Enter")
	x.wait(runPane, "(answered via dashboard: accept)")
	// The URL: peeked, declined with one key.
	x.wait(topPane, "Log in to the registry")
	x.run("send-keys", "-t", topPane, "Enter")
	x.wait(topPane, "https://auth.example.com/device")
	x.run("send-keys", "-t", topPane, "d")
	x.wait(runPane, "RUN-EXIT=0")

	b, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Message      string `json:"message"`
		Elicitations []struct {
			Action    string `json:"action"`
			DecidedBy string `json:"decided_by"`
			Via       string `json:"via"`
		} `json:"elicitations"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	var got []string
	for _, e := range r.Elicitations {
		got = append(got, e.Action+" by "+e.DecidedBy+" via "+e.Via)
	}
	if strings.Join(got, ", ") != "accept by human via dashboard, decline by human via dashboard" {
		t.Fatalf("elicitations %v", got)
	}
	if !strings.Contains(r.Message, `database="staging"`) || !strings.Contains(r.Message, "port=5432") || !strings.Contains(r.Message, "password=<secret, 10 chars>") {
		t.Fatalf("the agent did not get the values: %q", r.Message)
	}
	log, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "s3cret-top") || strings.Count(string(log), `"via":"dashboard"`) < 2 {
		t.Fatalf("the audit log leaks the secret or lacks the channel:\n%s", log)
	}
	x.run("send-keys", "-t", topPane, "q")
	x.wait(topPane, "TOP-EXIT=0")
}

// A fleet's budget is in its feed's /state (the fleet's limits, each
// task's reservation) and in tai top, usage against the limits.
func TestTopShowsTheBudget(t *testing.T) {
	tmp, _, repo := setup(t)
	// policy approve: ask (reads allowed): the task waits at its ask while top shows the budget.
	write(t, filepath.Join(tmp, "plan.yaml"), `name: budget
goal: a task under a budget that asks
policy: {approve: ask, allow: ["read"]}
concurrency: 1
budget: {tokens: 100000, turns: 5, cost: 2}
tasks:
  - {id: alpha, script: alpha.yaml, prompt: write alpha.txt}
`)
	write(t, filepath.Join(tmp, "alpha.yaml"), "steps:\n  - write: {path: alpha.txt, content: \"alpha\\n\"}\n  - text: \"alpha done\"\n")
	x := tmux{t: t, sock: filepath.Join(tmp, "tmux.sock")}
	x.run("new-session", "-d", "-s", "e2e", "-x", "160", "-y", "40",
		fmt.Sprintf("%s %s fleet run --run-id budget -C %s %s; echo FLEET-EXIT=$?; sleep 3600", env(tmp), taiBin, repo, filepath.Join(tmp, "plan.yaml")))
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", x.sock, "kill-server").Run() })
	x.wait("e2e.0", "[y] allow once")

	eps, err := feed.List(filepath.Join(tmp, "rt", "tai"))
	if err != nil || len(eps) != 1 {
		t.Fatalf("feeds %v, %v", eps, err)
	}
	c := feed.Dial(eps[0].Path)
	defer c.Close()
	st, err := c.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b := st.Budget; b == nil || b.Limit != (feed.Limits{Tokens: 100000, Turns: 5, Cost: 2}) || len(b.Over) != 0 {
		t.Fatalf("the fleet's budget in /state: %+v", st.Budget)
	}
	if len(st.Tasks) != 1 || st.Tasks[0].Budget == nil || st.Tasks[0].Budget.Limit != (feed.Limits{Tokens: 100000, Turns: 5, Cost: 2}) {
		t.Fatalf("the task's budget in /state: %+v", st.Tasks)
	}
	top := exec.Command(taiBin, "top", "--once", "--width", "200")
	top.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tmp, "state"), "XDG_RUNTIME_DIR="+filepath.Join(tmp, "rt"), "NO_COLOR=1")
	out, err := top.CombinedOutput()
	if err != nil {
		t.Fatalf("tai top --once: %v\n%s", err, out)
	}
	for _, want := range []string{"── fleet budget · 1 task: 1 running", "budget: tokens 0/100k (0%) · turns 0/5 · cost 0.00/2.00 (0%)", "0/100k", "0.00/2.00"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("tai top lacks %q:\n%s", want, out)
		}
	}
	// The same for scripts: every live run's state, one JSON array.
	top = exec.Command(taiBin, "top", "--once", "-o", "json")
	top.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(tmp, "state"), "XDG_RUNTIME_DIR="+filepath.Join(tmp, "rt"), "NO_COLOR=1")
	if out, err = top.Output(); err != nil {
		t.Fatalf("tai top --once -o json: %v\n%s", err, out)
	}
	var states []feed.State
	if err := json.Unmarshal(out, &states); err != nil || len(states) != 1 || states[0].Budget == nil || states[0].Budget.Limit.Tokens != 100000 {
		t.Errorf("tai top --once -o json: %v\n%s", err, out)
	}
	x.run("send-keys", "-t", "e2e.0", "y", "Enter")
	x.wait("e2e.0", "FLEET-EXIT=0")
}
