package modelserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentFamilies are the tool sets each real agent offers (real-agents.md,
// "Tool names and argument shapes seen"), with the API it speaks.
var agentFamilies = []struct {
	agent string
	api   string
	tools []testTool
	read  string
	write string
	shell string
}{
	{"qwen", apiChat, tools("read_file", "write_file", "run_shell_command", "glob"), "read_file", "write_file", "run_shell_command"},
	{"gemini", apiGemini, tools("glob", "read_file", "write_file", "run_shell_command"), "read_file", "write_file", "run_shell_command"},
	{"codex", apiResponses, []testTool{{name: "exec_command"}, {name: "apply_patch", custom: true}}, "exec_command", "apply_patch", "exec_command"},
	{"opencode", apiChat, tools("bash", "read", "write", "edit"), "read", "write", "bash"},
	{"claude", apiAnthropic, tools("Bash", "Read", "Write", "Edit"), "Read", "Write", "Bash"},
	{"copilot", apiChat, tools("bash", "view", "create", "edit"), "view", "create", "bash"},
}

func loadFixtureScript(t *testing.T, name string) string {
	t.Helper()
	file := filepath.Join("testdata", "scripts", name)
	sc, err := LoadScript(file)
	if err != nil {
		t.Fatal(err)
	}
	must(t, len(sc.Ignore) == 2 && sc.Ignore[0] == "SUGGESTION MODE" && sc.Ignore[1] == "memory extraction", "ignore %v", sc.Ignore)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestScriptText(t *testing.T) {
	script := loadFixtureScript(t, "text.json")
	for _, fam := range agentFamilies {
		t.Run(fam.agent, func(t *testing.T) {
			f := newFixture(t, script)
			r := f.call(t, fam.api, true, reqOpts{tools: fam.tools})
			must(t, r.text == "Hello from the scripted model." && len(r.calls) == 0, "reply %q %+v", r.text, r.calls)
			r = f.call(t, fam.api, false, reqOpts{})
			must(t, r.text == "Hello from the scripted model.", "untooled reply %q", r.text)
		})
	}
}

func TestScriptWrite(t *testing.T) {
	script := loadFixtureScript(t, "write.json")
	for _, fam := range agentFamilies {
		t.Run(fam.agent, func(t *testing.T) {
			f := newFixture(t, script)
			r := f.call(t, fam.api, true, reqOpts{tools: fam.tools, prompt: "create hello.txt"})
			must(t, len(r.calls) == 1 && r.calls[0].Name == fam.write, "calls %+v, want %s", r.calls, fam.write)
			checkWrite(t, fam.write, r.calls[0])

			// qwen's suggestion side request does not eat the final turn.
			side := f.call(t, fam.api, true, reqOpts{tools: fam.tools, prompt: "SUGGESTION MODE: what next?"})
			must(t, len(side.calls) == 0, "side request got calls %+v", side.calls)

			r = f.call(t, fam.api, false, reqOpts{tools: fam.tools, prompt: "tool result: ok"})
			must(t, r.text == "Created hello.txt." && len(r.calls) == 0, "final %q %+v", r.text, r.calls)
		})
	}
}

func checkWrite(t *testing.T, name string, c gotCall) {
	t.Helper()
	want := map[string]string{
		"write_file":  `{"file_path":"/repo/hello.txt","content":"hello\n"}`,
		"write":       `{"filePath":"/repo/hello.txt","content":"hello\n"}`,
		"Write":       `{"file_path":"/repo/hello.txt","content":"hello\n"}`,
		"create":      `{"path":"/repo/hello.txt","file_text":"hello\n"}`,
		"apply_patch": "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n",
	}[name]
	if name == "apply_patch" {
		must(t, c.Custom && c.Input == want, "apply_patch input %q", c.Input)
		return
	}
	must(t, canonCalls(t, []gotCall{c})[0].Args == canonCalls(t, []gotCall{{Args: want}})[0].Args, "%s args %s, want %s", name, c.Args, want)
}

func TestScriptReadWriteShell(t *testing.T) {
	script := loadFixtureScript(t, "read-write-shell.json")
	for _, fam := range agentFamilies {
		t.Run(fam.agent, func(t *testing.T) {
			f := newFixture(t, script)
			for i, want := range []string{fam.read, fam.write, fam.shell} {
				r := f.call(t, fam.api, i%2 == 0, reqOpts{tools: fam.tools})
				must(t, len(r.calls) == 1 && r.calls[0].Name == want, "step %d: calls %+v, want %s", i, r.calls, want)
				c := r.calls[0]
				switch i {
				case 0:
					must(t, strings.Contains(c.Args, "notes.txt"), "read args %s", c.Args)
					must(t, fam.agent == "codex" || strings.Contains(c.Args, "/repo/notes.txt"), "read path not absolute: %s", c.Args)
				case 1:
					checkWrite(t, want, c)
				case 2:
					must(t, strings.Contains(c.Args, "cat hello.txt && echo shell-ok"), "shell args %s", c.Args)
				}
			}
			r := f.call(t, fam.api, true, reqOpts{tools: fam.tools})
			must(t, strings.Contains(r.text, "shell-ok") && len(r.calls) == 0, "final %q", r.text)
			must(t, f.srv.State().Exhausted, "script not exhausted")
		})
	}
}
