package streamjson

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/e2e/internal/modelsrv"
)

// world is one run's setting: a temp HOME and workspace, and a `tai model
// serve` process playing a script.
type world struct {
	t                     *testing.T
	dir, home, repo, mlog string
	url                   string
	env                   []string
	lastStderr            string
	// audit, if set, is where tai writes the run's audit log (else
	// --no-audit).
	audit string
}

func newWorld(t *testing.T, script string) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{t: t, dir: dir, home: filepath.Join(dir, "home"), repo: filepath.Join(dir, "repo"), mlog: filepath.Join(dir, "model.jsonl")}
	for _, d := range []string{w.home, filepath.Join(w.home, "tmp"), w.repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sf := filepath.Join(dir, "script.json")
	if err := os.WriteFile(sf, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.report)
	w.startModel(sf)
	w.env = []string{
		"HOME=" + w.home, "TMPDIR=" + filepath.Join(w.home, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config"), "XDG_CACHE_HOME=" + filepath.Join(w.home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(w.home, ".local", "state"), "XDG_DATA_HOME=" + filepath.Join(w.home, ".local", "share"),
		"PATH=" + os.Getenv("PATH"), "SHELL=/bin/bash", "LANG=C.UTF-8", "NO_COLOR=1",
	}
	for _, k := range []string{"GORACE", "GOCOVERDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			w.env = append(w.env, k+"="+v)
		}
	}
	return w
}

// claudeEnv points Claude Code at the model server, offline, as root.
func (w *world) claudeEnv() {
	w.env = append(w.env, "ANTHROPIC_BASE_URL="+w.url, "ANTHROPIC_API_KEY=sk-ant-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "IS_SANDBOX=1")
}

func (w *world) startModel(script string) {
	w.url = modelsrv.Start(w.t, taiBin, script, w.repo, w.mlog).URL
}

type outcome struct {
	stdout, stderr string
	code           int
}

// run runs `tai run` to the end. The context only guards against a hang;
// nothing asserts on time.
func (w *world) run(args ...string) outcome {
	w.t.Helper()
	auditArgs := []string{"--no-audit"}
	if w.audit != "" {
		auditArgs = []string{"--audit", w.audit}
	}
	all := append(append([]string{"run", "-v", "-C", w.repo, "--trace", filepath.Join(w.dir, "trace.jsonl")}, auditArgs...), args...)
	o := build.Run(w.t, taiBin, w.repo, w.env, all...)
	w.lastStderr = o.Stderr
	return outcome{o.Stdout, o.Stderr, o.Code}
}

type result struct {
	Status      string `json:"status"`
	StopReason  string `json:"stop_reason"`
	SessionID   string `json:"session_id"`
	Driver      string `json:"driver"`
	Message     string `json:"message"`
	ExitCode    int    `json:"exit_code"`
	Error       string `json:"error"`
	Permissions []struct {
		Verdict  string `json:"verdict"`
		ToolKind string `json:"tool_kind"`
	} `json:"permissions"`
	Denials []struct {
		Verdict   string `json:"verdict"`
		DecidedBy string `json:"decided_by"`
		Reason    string `json:"reason"`
	} `json:"denials"`
	FilesWritten []struct {
		Path      string `json:"path"`
		Size      int64  `json:"size"`
		HashAfter string `json:"hash_after"`
	} `json:"files_written"`
	Usage *struct {
		OutputTokens int64   `json:"output_tokens"`
		Cost         float64 `json:"cost"`
	} `json:"usage"`
}

func (w *world) result(o outcome) result {
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

// wrote checks that the run's files_written is exactly the workspace
// files named, each with its size and hash.
func (w *world) wrote(r result, names ...string) {
	w.t.Helper()
	var got []string
	for _, f := range r.FilesWritten {
		got = append(got, f.Path)
		if f.Size == 0 || !strings.HasPrefix(f.HashAfter, "sha256:") {
			w.t.Errorf("file write %+v lacks its size or hash", f)
		}
	}
	var want []string
	for _, n := range names {
		want = append(want, filepath.Join(w.repo, n))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		w.t.Errorf("files_written = %q, want %q", got, want)
	}
}

// wire counts the lines the agent printed (dir "in") or tai sent it
// ("out") that contain s, from the run's trace.
func (w *world) wire(dir, s string) int {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, "trace.jsonl"))
	if err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		var e struct {
			Dir  string          `json:"dir"`
			Line json.RawMessage `json:"line"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Dir == dir && strings.Contains(string(e.Line), s) {
			n++
		}
	}
	return n
}

// frames parses --output stream-json.
func (w *world) frames(stdout string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			w.t.Fatalf("frame is not JSON: %v: %.300s", err, line)
		}
		out = append(out, f)
	}
	return out
}

// leftovers lists live processes whose command line, cwd or HOME points
// into this run's directory.
func (w *world) leftovers() []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		cmd := strings.ReplaceAll(string(cmdline), "\x00", " ")
		if strings.Contains(cmd, "model serve") {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if strings.Contains(cmd, w.dir) || strings.HasPrefix(cwd, w.dir) ||
			bytes.Contains(append([]byte{0}, env...), []byte("\x00HOME="+w.home+"\x00")) {
			out = append(out, e.Name()+": "+cmd)
		}
	}
	return out
}

// checkNoLeftovers fails if a process of the run outlived tai. Killed
// processes take a moment to be reaped, so it polls (10 s at most).
func (w *world) checkNoLeftovers() {
	w.t.Helper()
	var left []string
	for range 200 {
		if left = w.leftovers(); len(left) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.t.Errorf("processes left behind:\n  %s", strings.Join(left, "\n  "))
}

func (w *world) report() {
	if !w.t.Failed() {
		return
	}
	w.t.Logf("tai stderr (tail):\n%s", tailStr(w.lastStderr, 4000))
	if b, err := os.ReadFile(filepath.Join(w.dir, "trace.jsonl")); err == nil {
		w.t.Logf("wire trace (tail):\n%s", tailStr(string(b), 6000))
	}
}

func tailStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
