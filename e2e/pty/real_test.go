package pty

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// realQwen sets up qwen-code's TUI against `tai model serve` with script
// (a path under modelserver/testdata/scripts): a throw-away HOME with the
// settings of e2e/realagents, a git repo, the model server. It skips when
// qwen is not installed and CI is unset.
func realQwen(t *testing.T, script string) (repo string, env []string, cmd string) {
	t.Helper()
	exe, node := os.Getenv("TAI_AGENT_QWEN"), os.Getenv("TAI_NODE22_BIN")
	if exe == "" || node == "" {
		if os.Getenv("CI") != "" {
			t.Fatal(`qwen is not installed: TAI_AGENT_QWEN/TAI_NODE22_BIN unset; .ci/run must eval "$(scripts/install-agents.sh | sed 's/^/export /')"`)
		}
		t.Skip(`skipping: qwen is not installed (TAI_AGENT_QWEN unset); run eval "$(scripts/install-agents.sh | sed 's/^/export /')"`)
	}
	dir := t.TempDir()
	home, repo := filepath.Join(dir, "home"), filepath.Join(dir, "repo")
	for _, d := range []string{filepath.Join(home, "tmp"), filepath.Join(home, ".qwen"), repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".qwen", "settings.json"), []byte(`{
  "security": {"auth": {"selectedType": "openai"}}, "model": {"name": "fake-model"},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
  "ui": {"enableFollowupSuggestions": false}, "memory": {"enableManagedAutoMemory": false},
  "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	git := exec.Command("git", "init", "-q", "-b", "main")
	git.Dir = repo
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	abs, err := filepath.Abs(filepath.Join("..", "..", "modelserver", "testdata", "scripts", script))
	if err != nil {
		t.Fatal(err)
	}
	urlFile := filepath.Join(dir, "url")
	model := exec.Command(taiBin, "model", "serve", "--script", abs, "--cwd", repo, "--url-file", urlFile)
	if err := model.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = model.Process.Signal(syscall.SIGTERM)
		_ = model.Wait()
	})
	var url string
	for range 3000 { // the server writes the file atomically; 30 s at most
		if b, err := os.ReadFile(urlFile); err == nil {
			url = strings.TrimSpace(string(b))
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if url == "" {
		t.Fatal("tai model serve wrote no URL")
	}
	env = []string{
		"HOME=" + home, "TMPDIR=" + filepath.Join(home, "tmp"), "LANG=C.UTF-8", "SHELL=/bin/bash",
		"PATH=" + node + string(os.PathListSeparator) + os.Getenv("PATH"),
		"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-fake", "OPENAI_MODEL=fake-model",
	}
	return repo, env, exe + " --approval-mode default"
}

// qwen's TUI through tai: a text turn, a write allowed and denied by
// policy through its "Apply this change?" picker, and a cancelled turn.
func TestRealQwen(t *testing.T) {
	for _, tc := range []struct {
		name, script, prompt string
		args                 []string
		code                 int
		status, message      string
		file                 bool
	}{
		{"text", "text.json", "Say hello.", nil, 0, "ok", "Hello from the scripted model.", false},
		{"write-allowed", "write.json", "Create hello.txt", []string{"--approve", "all"}, 0, "ok", "I'll create hello.txt.\nCreated hello.txt.", true},
		{"write-denied", "write.json", "Create hello.txt", []string{"--approve", "deny"}, 5, "denied", "I'll create hello.txt.", false},
		{"cancel", "../../../e2e/realagents/testdata/slow-model.json", "Take your time.", []string{"--timeout", "8s"}, 3, "timeout", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, env, cmd := realQwen(t, tc.script)
			args := append([]string{"run", "--agent", "qwen", "--agent-cmd", cmd, "--driver", "pty", "-C", repo, "-o", "json"}, tc.args...)
			o := tai(t, repo, env, append(args, tc.prompt)...)
			r := parse(t, o)
			if o.code != tc.code || r.Status != tc.status {
				t.Fatalf("exit %d status %q error %q; want %d %q\nstderr:\n%s", o.code, r.Status, r.Error, tc.code, tc.status, o.stderr)
			}
			if tc.message != "" && r.Message != tc.message {
				t.Errorf("message %q, want %q", r.Message, tc.message)
			}
			if _, err := os.Stat(filepath.Join(repo, "hello.txt")); (err == nil) != tc.file {
				t.Errorf("hello.txt exists = %v, want %v", err == nil, tc.file)
			}
			checkNoLeftovers(t, repo)
		})
	}
}

// checkNoLeftovers fails if a process still runs in the repo after tai
// is gone (the TUI's group was killed).
func checkNoLeftovers(t *testing.T, repo string) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || !strings.HasPrefix(cwd, repo) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(string(cmdline), "\x00", " ")))
		sc.Scan()
		t.Errorf("process %s left running in the workspace: %s", e.Name(), sc.Text())
	}
}
