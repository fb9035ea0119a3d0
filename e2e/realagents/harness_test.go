package realagents

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/modelsrv"
)

// notesMarker is in the repo's notes.txt: a request to the model that
// carries it proves the agent read the file.
const notesMarker = "n0tes-marker-42"

// world is one scenario run: a temp HOME, a git repo with notes.txt
// committed, the agent's settings, and a `tai model serve` process with
// the scenario's script. It is torn down with the test.
type world struct {
	t        *testing.T
	a        agent
	paths           // dir, home, repo
	exe      string // the agent's executable
	env      []string
	url      string // the model server's base URL
	mlog     string // its request log
	modelPid int    // the model server, which is not the agent's leftover
	trace    string // tai --trace
	audit    string // tai --audit
	// stderr of the last tai run, for failure reports.
	lastStderr string
	// moreModels are the model servers of a compare's other agents.
	moreModels []int
}

// newWorld sets up a run of agent a, whose executable is exe, in scenario
// with the given model script (a path).
func newWorld(t *testing.T, a agent, exe, scenario, script string) *world {
	t.Helper()
	return newWorldAt(t, a, exe, scenario, script, "")
}

// newWorldAt is newWorld with the model's {{CWD}} set to cwd, a path under
// the repo (a fleet task's worktree), instead of the repo itself.
func newWorldAt(t *testing.T, a agent, exe, scenario, script, cwd string) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{t: t, a: a, exe: exe,
		paths: paths{dir: dir, home: filepath.Join(dir, "home"), repo: filepath.Join(dir, "repo")},
		mlog:  filepath.Join(dir, "model.jsonl"), trace: filepath.Join(dir, "trace.jsonl"), audit: filepath.Join(dir, "audit.jsonl"),
	}
	for _, d := range []string{w.home, filepath.Join(w.home, "tmp"), w.repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(w.repo, "notes.txt"), "Notes for the agent: "+notesMarker+"\n")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.email", "tests@tai.invalid"},
		{"config", "user.name", "tai tests"},
		{"add", "notes.txt"},
		{"commit", "-q", "-m", "notes"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	// Cleanups run last-in first-out: the report and the process sweep
	// run before the temp dir goes.
	t.Cleanup(w.report)
	if cwd == "" {
		cwd = w.repo
	} else {
		cwd = filepath.Join(w.repo, cwd)
	}
	w.startModel(script, cwd)
	w.env = w.baseEnv()
	w.env = append(w.env, a.configure(t, w.paths, w.url, scenario)...)
	return w
}

// baseEnv is the agent's environment before its own settings: nothing of
// the developer's (keys, XDG dirs, CI) leaks in. tai passes its environment
// to the agent.
func (w *world) baseEnv() []string {
	env := []string{
		"HOME=" + w.home,
		"TMPDIR=" + filepath.Join(w.home, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(w.home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(w.home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(w.home, ".local", "state"),
		"PATH=" + os.Getenv("PATH"),
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
		"NO_COLOR=1",
	}
	for _, k := range []string{"USER", "LOGNAME", "GORACE", "GOCOVERDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// startModel runs `tai model serve` as a real process and waits for its URL.
func (w *world) startModel(script, cwd string) {
	srv := modelsrv.Start(w.t, taiBin, script, cwd, w.mlog)
	w.url, w.modelPid = srv.URL, srv.Pid
}

// outcome is a finished tai run.
type outcome struct {
	stdout, stderr string
	code           int
}

// taiArgs are the arguments of every run: the preset (for its quirks) with
// the installed binary, the workspace, the trace and the audit log, and -v
// so that the agent's own stderr is in tai's (shown when a test fails).
func (w *world) taiArgs(extra ...string) []string {
	args := []string{"run", "-v", "--agent", w.a.name, "--agent-cmd", w.a.command(w.t, w.exe), "-C", w.repo, "--trace", w.trace}
	if hasAudit {
		args = append(args, "--audit", w.audit)
	}
	return append(args, extra...)
}

// command is a tai run, not started. The context only guards against a
// hang in tai itself; nothing asserts on time.
func (w *world) command(ctx context.Context, extra ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, taiBin, w.taiArgs(extra...)...)
	cmd.Dir = w.repo
	cmd.Env = w.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

// run runs tai to the end.
func (w *world) run(extra ...string) outcome {
	w.t.Helper()
	o := build.Run(w.t, taiBin, w.repo, w.env, w.taiArgs(extra...)...)
	w.lastStderr = o.Stderr
	return outcome{o.Stdout, o.Stderr, o.Code}
}

func (w *world) finish(err error, out, errb *bytes.Buffer) outcome {
	w.t.Helper()
	w.lastStderr = errb.String()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("running tai: %v", err)
	}
	return outcome{out.String(), errb.String(), code}
}

// result mirrors the parts of the JSON result the suite checks.
type result struct {
	Status      string     `json:"status"`
	StopReason  string     `json:"stop_reason"`
	SessionID   string     `json:"session_id"`
	Agent       string     `json:"agent"`
	Message     string     `json:"message"`
	ExitCode    int        `json:"exit_code"`
	Error       string     `json:"error"`
	Permissions []decision `json:"permissions"`
	Denials     []decision `json:"denials"`
	Errors      []struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
}

type decision struct {
	RequestID string `json:"request_id"`
	OptionID  string `json:"option_id"`
	Verdict   string `json:"verdict"`
	ToolKind  string `json:"tool_kind"`
	Title     string `json:"title"`
	// Unrequested: a file or terminal call the agent made without
	// asking, which tai decided all the same.
	Unrequested bool `json:"unrequested"`
}

func (w *world) jsonResult(o outcome) result {
	w.t.Helper()
	var r result
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		w.t.Fatalf("stdout is not one JSON result (%v):\n%s", err, o.stdout)
	}
	if r.ExitCode != o.code {
		w.t.Fatalf("JSON exit_code %d but tai exited %d", r.ExitCode, o.code)
	}
	return r
}

// frames parses stream-json output; the last frame is the result.
func (w *world) frames(stdout string) []map[string]any {
	w.t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		var f map[string]any
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			w.t.Fatalf("frame is not JSON: %v: %.300s", err, sc.Text())
		}
		out = append(out, f)
	}
	if len(out) == 0 || out[len(out)-1]["type"] != "result" {
		w.t.Fatalf("the stream does not end with a result frame:\n%s", tail(stdout, 2000))
	}
	return out
}

// modelEntry is a line of the model server's request log.
type modelEntry struct {
	N            int             `json:"n"`
	Path         string          `json:"path"`
	API          string          `json:"api"`
	Model        string          `json:"model"`
	OfferedTools []string        `json:"offered_tools"`
	Consumed     bool            `json:"consumed"`
	Turn         int             `json:"turn"`
	Reason       string          `json:"reason"`
	Status       int             `json:"status"`
	Body         json.RawMessage `json:"body"`
}

func (w *world) modelLog() []modelEntry {
	w.t.Helper()
	b, err := os.ReadFile(w.mlog)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		w.t.Fatalf("reading the model log: %v", err)
	}
	var out []modelEntry
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e modelEntry
		if err := json.Unmarshal(line, &e); err != nil {
			w.t.Fatalf("model log line is not JSON: %v", err)
		}
		out = append(out, e)
	}
	return out
}

// consumedTurn is the request that consumed scripted turn n, if any.
func (w *world) consumedTurn(n int) (modelEntry, bool) {
	for _, e := range w.modelLog() {
		if e.Consumed && e.Turn == n {
			return e, true
		}
	}
	return modelEntry{}, false
}

// modelState asks the model server how far the script got.
func (w *world) modelState() (nextTurn int, err error) {
	resp, err := http.Get(w.url + "/_state")
	if err != nil {
		return 0, fmt.Errorf("GET /_state: %w", err)
	}
	defer resp.Body.Close()
	var st struct {
		NextTurn int `json:"next_turn"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("decoding /_state: %w", err)
	}
	return st.NextTurn, nil
}

// auditEntries reads tai's audit log: kind and data of each entry.
func (w *world) auditEntries() []auditEntry {
	w.t.Helper()
	b, err := os.ReadFile(w.audit)
	if err != nil {
		w.t.Fatalf("reading the audit log: %v", err)
	}
	var out []auditEntry
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e auditEntry
		if err := json.Unmarshal(line, &e); err != nil {
			w.t.Fatalf("audit line is not JSON: %v: %.200s", err, line)
		}
		out = append(out, e)
	}
	return out
}

type auditEntry struct {
	Kind string `json:"kind"`
	Data struct {
		Decision    string `json:"decision"`
		PID         int    `json:"pid"`
		RequestID   string `json:"request_id"`
		Reason      string `json:"reason"`
		CurrentMode string `json:"current_mode"` // session.start
		To          string `json:"to"`           // mode.change
	} `json:"data"`
}

// agentPid is the agent's pid (and so its process group) from the audit
// log's process.start entry; 0 when there is none.
func (w *world) agentPid() int {
	if !hasAudit {
		return 0
	}
	for _, e := range w.auditEntries() {
		if e.Kind == "process.start" && e.Data.PID > 0 {
			return e.Data.PID
		}
	}
	return 0
}

// checkNoLeftovers fails the test if any process of the run outlived tai:
// anything in the agent's process group, or whose command line, working
// directory or HOME points into this run's directory. Killed processes
// take a moment to go, so it polls (10 s at most); zombies are dead and
// do not count. What it finds is killed, by pid, after the report.
func (w *world) checkNoLeftovers() {
	w.t.Helper()
	pgid := w.agentPid()
	var left []leftover
	for range 200 {
		left = w.leftovers(pgid)
		if len(left) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	var lines []string
	for _, l := range left {
		lines = append(lines, l.String())
	}
	w.t.Errorf("processes left behind (agent group %d):\n  %s", pgid, strings.Join(lines, "\n  "))
	for _, l := range left {
		_ = syscall.Kill(l.pid, syscall.SIGKILL)
	}
}

type leftover struct {
	pid, pgid int
	why, cmd  string
}

func (l leftover) String() string {
	return fmt.Sprintf("pid %d (group %d, %s): %s", l.pid, l.pgid, l.why, l.cmd)
}

func (w *world) leftovers(agentPgid int) []leftover {
	ents, _ := os.ReadDir("/proc")
	var out []leftover
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || pid == w.modelPid || slices.Contains(w.moreModels, pid) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			continue
		}
		f := bytes.Fields(stat[i+2:])
		if len(f) < 3 || f[0][0] == 'Z' {
			continue
		}
		pgid, _ := strconv.Atoi(string(f[2]))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmd := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		why := ""
		switch {
		case agentPgid > 0 && pgid == agentPgid:
			why = "in the agent's group"
		case strings.Contains(cmd, w.dir):
			why = "command line"
		default:
			if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && strings.HasPrefix(cwd, w.dir) {
				why = "cwd " + cwd
			} else if env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil &&
				bytes.Contains(append([]byte{0}, env...), []byte("\x00HOME="+w.home+"\x00")) {
				why = "HOME"
			}
		}
		if why != "" {
			out = append(out, leftover{pid: pid, pgid: pgid, why: why, cmd: cmd})
		}
	}
	return out
}

// report prints, when the test failed, what is needed to see why: tai's
// stderr, the tail of the model's request log and of the wire trace.
func (w *world) report() {
	t := w.t
	if !t.Failed() {
		return
	}
	t.Logf("tai stderr (tail):\n%s", tail(w.lastStderr, 4000))
	var lines []string
	for _, e := range w.modelLog() {
		lines = append(lines, fmt.Sprintf("#%d %s %s model=%s status=%d consumed=%v turn=%d %s tools=%d body: %s",
			e.N, e.API, e.Path, e.Model, e.Status, e.Consumed, e.Turn, e.Reason, len(e.OfferedTools), tail(string(e.Body), 300)))
	}
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	t.Logf("model requests (%s, last 20):\n%s", w.mlog, strings.Join(lines, "\n"))
	if b, err := os.ReadFile(w.trace); err == nil {
		tr := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(tr) > 25 {
			tr = tr[len(tr)-25:]
		}
		for i, l := range tr {
			if len(l) > 400 {
				tr[i] = l[:400] + "…"
			}
		}
		t.Logf("wire trace (last 25 lines):\n%s", strings.Join(tr, "\n"))
	}
	// A stuck run would also leave processes: sweep them (by pid).
	for _, l := range w.leftovers(w.agentPidQuiet()) {
		_ = syscall.Kill(l.pid, syscall.SIGKILL)
	}
}

// agentPidQuiet is agentPid for cleanups: no failure if the log is missing.
func (w *world) agentPidQuiet() int {
	if _, err := os.Stat(w.audit); err != nil {
		return 0
	}
	return w.agentPid()
}

// around is what follows the last mention of key in b, up to n bytes: the
// part of a model request that shows what the agent sent back for a tool.
func around(b []byte, key string, n int) string {
	i := bytes.LastIndex(b, []byte(key))
	if i < 0 {
		return fmt.Sprintf("(no %q in %d bytes)", key, len(b))
	}
	return string(b[i:min(len(b), i+n)])
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// waitFor polls cond until it holds, the run exits (exited closed) or
// about 3 minutes pass; it reports whether cond held.
func waitFor(exited <-chan struct{}, cond func() bool) bool {
	for range 3600 {
		if cond() {
			return true
		}
		select {
		case <-exited:
			return cond()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}
