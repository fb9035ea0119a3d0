package fleet_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// examplesDir is the repository's examples/.
func examplesDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Each plan in examples/ runs offline and does what it says.
func TestExamples(t *testing.T) {
	t.Run("builtin-dag", func(t *testing.T) {
		repo := gitRepo(t)
		out, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "ex", "-C", repo, "-o", "json", filepath.Join(examplesDir(t), "builtin-dag", "plan.yaml"))
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		var s summary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		if s.Counts["merged"] != 4 {
			t.Fatalf("counts %v", s.Counts)
		}
		for f, want := range map[string]string{"greeting.go": "func Greet", "greeting_test.go": "TestGreet", "docs/greeting.md": "Greet(name)", "CHANGELOG.md": "greeting"} {
			if got := git(t, repo, "show", s.Target+":"+f); !strings.Contains(got, want) {
				t.Errorf("%s on %s: %q", f, s.Target, got)
			}
		}
		b, err := os.ReadFile(s.Audit)
		if err != nil {
			t.Fatal(err)
		}
		// The tests task got the api task's diff and patch in its prompt.
		if !strings.Contains(string(b), "Write tests for this change (1 file(s) changed, +4 -0: greeting.go)") || !strings.Contains(string(b), "+func Greet(name string)") {
			t.Fatal("the dependent's prompt lacks its dependency's diff")
		}
	})
	t.Run("qwen-offline", func(t *testing.T) {
		qwen := os.Getenv("TAI_AGENT_QWEN")
		if qwen == "" {
			if os.Getenv("CI") != "" {
				t.Fatal(`TAI_AGENT_QWEN is not set but CI is: install the agents (eval "$(scripts/install-agents.sh | sed 's/^/export /')")`)
			}
			t.Skip(`qwen is not installed (TAI_AGENT_QWEN unset); run eval "$(scripts/install-agents.sh | sed 's/^/export /')"`)
		}
		repo := gitRepo(t)
		path := filepath.Dir(qwen) + string(os.PathListSeparator)
		if n := os.Getenv("TAI_NODE22_BIN"); n != "" {
			path += n + string(os.PathListSeparator) // qwen-code needs Node 22
		}
		cmd := exec.Command(filepath.Join(examplesDir(t), "qwen-offline", "run.sh"), repo, "-o", "json")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "TAI="+taiBin, "RUN_ID=qwenex", "XDG_STATE_HOME="+stateDir, "NO_COLOR=1", "PATH="+path+os.Getenv("PATH"))
		var errb strings.Builder
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run.sh: %v\n%s\n%s", err, out, errb.String())
		}
		var s summary
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if s.Counts["merged"] != 2 {
			t.Fatalf("counts %v\n%s", s.Counts, errb.String())
		}
		if got := git(t, repo, "show", s.Target+":hello.txt"); got != "hello" {
			t.Fatalf("hello.txt = %q", got)
		}
		if got := git(t, repo, "show", s.Target+":REVIEW.md"); !strings.Contains(got, "looks right") {
			t.Fatalf("REVIEW.md = %q", got)
		}
	})
}
