// Package e2e runs the real tai binary against real agent processes: the
// built-in agent (with fault-injecting scripts) and third-party ACP peers.
package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/build"
)

var (
	taiBin   string
	stateDir string // XDG_STATE_HOME of every tai the tests run
	// startAgentBin is e2e/internal/startagent: an agent that needs a
	// directory outside its workspace at start.
	startAgentBin string
)

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-bin-", func(dir string, bins []string) {
		taiBin, stateDir, startAgentBin = bins[0], filepath.Join(dir, "state"), bins[1]
	}, build.Tai, "github.com/tai-dev/tai/e2e/internal/startagent")
}

// result mirrors the JSON result document.
type result struct {
	Status       string `json:"status"`
	StopReason   string `json:"stop_reason"`
	SessionID    string `json:"session_id"`
	Agent        string `json:"agent"`
	Message      string `json:"message"`
	ExitCode     int    `json:"exit_code"`
	Error        string `json:"error"`
	Permissions  []decision
	Denials      []decision
	FilesWritten []struct {
		Path      string `json:"path"`
		Size      int64  `json:"size"`
		HashAfter string `json:"hash_after"`
	} `json:"files_written"`
	Terminals []struct {
		Command  string `json:"command"`
		ExitCode *int   `json:"exit_code"`
	} `json:"terminals"`
	Errors []struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
}

type decision struct {
	OptionID    string `json:"option_id"`
	Verdict     string `json:"verdict"`
	DecidedBy   string `json:"decided_by"`
	ToolKind    string `json:"tool_kind"`
	Title       string `json:"title"`
	Reason      string `json:"reason"`
	Unrequested bool   `json:"unrequested"`
}

// unrequested counts the decisions of calls the agent made without asking.
func unrequested(ds []decision) int {
	n := 0
	for _, d := range ds {
		if d.Unrequested {
			n++
		}
	}
	return n
}

type outcome struct {
	stdout, stderr string
	code           int
}

// tai runs the binary in dir and waits for it. The context only guards
// against a hang in tai itself; no test asserts on time.
func tai(t *testing.T, dir string, args ...string) outcome {
	t.Helper()
	return taiB(t, dir, args...)
}

func taiB(t testing.TB, dir string, args ...string) outcome {
	t.Helper()
	o := build.Run(t, taiBin, dir, append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+stateDir), args...)
	return outcome{o.Stdout, o.Stderr, o.Code}
}

func jsonResult(t *testing.T, o outcome) result {
	t.Helper()
	var r result
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil {
		t.Fatalf("stdout is not one JSON result (%v):\n%s\nstderr:\n%s", err, o.stdout, o.stderr)
	}
	if r.ExitCode != o.code {
		t.Fatalf("JSON exit_code %d but the process exited %d", r.ExitCode, o.code)
	}
	return r
}

func script(name string) string {
	p, _ := filepath.Abs(filepath.Join("testdata", name))
	return p
}

// builtinWith returns the --agent-cmd that runs the built-in agent with a
// script; the tai binary under test is the agent too.
func builtinWith(scriptPath string) string {
	return fmt.Sprintf("%s agent builtin --script %s", taiBin, scriptPath)
}

// frames parses stream-json output.
func frames(t *testing.T, stdout string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		var f map[string]any
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("frame is not JSON: %v: %.200s", err, sc.Text())
		}
		out = append(out, f)
	}
	return out
}

func frameTypes(fs []map[string]any) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		m[f["type"].(string)]++
	}
	return m
}

// agentProcesses lists live processes whose command line mentions marker.
func agentProcesses(t *testing.T, marker string) []string {
	t.Helper()
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), marker) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}
