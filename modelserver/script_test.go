package modelserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const scriptJSON = `{
  "turns": [
    {"text": "plain reply"},
    {"thinking": "hmm", "text": "answer"},
    {"text": "pre", "tool": "write_file", "args": {"file_path": "{{CWD}}/a.txt", "content": "x"}},
    {"tool": {"write_file": {"file_path": "a"}, "write": {"filePath": "a"}, "Write": {"file_path": "a"}, "create": {"path": "a", "file_text": "x"}, "apply_patch": "*** Begin Patch\n*** End Patch\n"}},
    {"tools": [{"tool": "read_file", "args": {"file_path": "n"}}, {"tool": "glob", "args": {"pattern": "*"}}]},
    {"json": {"b": 1, "a": [true, null, 1.5]}},
    {"text": "slow", "delay": 2.5, "chunk_delay": 20},
    {"error": 429, "retry_after": 3},
    {"error": 500, "message": "boom"},
    {"text": "only if", "match": "X"}
  ],
  "default": {"text": "def"},
  "untooled": {"text": "unt"},
  "consume": "all",
  "ignore": ["SUGGESTION MODE"],
  "cwd": "/abs/repo",
  "models": ["m1"],
  "_comment": "ignored"
}`

const scriptYAML = `
# the same script as scriptJSON
turns:
  - text: plain reply
  - thinking: hmm
    text: answer
  - text: pre
    tool: write_file
    args: {file_path: "{{CWD}}/a.txt", content: x}
  - tool:
      write_file: {file_path: a}
      write: {filePath: a}
      Write: {file_path: a}
      create: {path: a, file_text: x}
      apply_patch: |
        *** Begin Patch
        *** End Patch
  - tools:
      - {tool: read_file, args: {file_path: n}}
      - {tool: glob, args: {pattern: "*"}}
  - json: {b: 1, a: [true, null, 1.5]}
  - {text: slow, delay: 2.5, chunk_delay: 20}
  - {error: 429, retry_after: 3}
  - {error: 500, message: boom}
  - {text: only if, match: X}
default: {text: def}
untooled: {text: unt}
consume: all
ignore: [SUGGESTION MODE]
cwd: /abs/repo
models: [m1]
_comment: ignored
`

func TestParseScriptJSONAndYAML(t *testing.T) {
	js, err := ParseScript([]byte(scriptJSON), "json")
	if err != nil {
		t.Fatal(err)
	}
	ys, err := ParseScript([]byte(scriptYAML), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(js, ys) {
		t.Fatalf("JSON and YAML scripts differ:\n%+v\n%+v", js, ys)
	}
	sniffed, err := ParseScript([]byte(scriptYAML), "")
	if err != nil || !reflect.DeepEqual(sniffed, ys) {
		t.Fatalf("sniffed YAML: %v", err)
	}

	must(t, len(js.Turns) == 10, "turns %d", len(js.Turns))
	var names []string
	for _, o := range js.Turns[3].Calls[0].Options {
		names = append(names, o.Name)
	}
	must(t, strings.Join(names, ",") == "write_file,write,Write,create,apply_patch", "tool map order %v", names)
	must(t, string(js.Turns[3].Calls[0].Options[4].Args) == `"*** Begin Patch\n*** End Patch\n"`, "patch %s", js.Turns[3].Calls[0].Options[4].Args)
	must(t, string(js.Turns[2].Calls[0].Options[0].Args) == `{"file_path":"{{CWD}}/a.txt","content":"x"}`, "args %s", js.Turns[2].Calls[0].Options[0].Args)
	must(t, len(js.Turns[4].Calls) == 2, "parallel calls %d", len(js.Turns[4].Calls))
	must(t, string(js.Turns[5].JSON) == `{"b":1,"a":[true,null,1.5]}`, "json %s", js.Turns[5].JSON)
	must(t, js.Turns[6].Delay == 2500*time.Millisecond && js.Turns[6].ChunkDelay == 20*time.Millisecond, "delays %+v", js.Turns[6])
	must(t, js.Turns[7].Error == 429 && js.Turns[7].RetryAfter == 3*time.Second, "error turn %+v", js.Turns[7])
	must(t, js.Turns[8].Message == "boom" && js.Turns[9].Match == "X", "turns %+v %+v", js.Turns[8], js.Turns[9])
	must(t, js.Default.Text == "def" && js.Untooled.Text == "unt" && js.Consume == ConsumeAll, "top level %+v", js)
	must(t, js.Cwd == "/abs/repo" && js.Ignore[0] == "SUGGESTION MODE" && js.Models[0] == "m1", "top level %+v", js)
}

func TestParseScriptErrors(t *testing.T) {
	cases := []struct {
		name, format, script, want string
	}{
		{"syntax error has a position", "json", "{\n  \"turns\": [\n    {\"text\": \"a\",}\n  ]\n}", "line 3"},
		{"yaml syntax", "yaml", "turns:\n  - text: [unclosed\n", "yaml"},
		{"unknown turn key names the turn", "json", `{"turns":[{"text":"a"},{"txt":"b"}]}`, `turns[1]: unknown key "txt"`},
		{"empty turn", "json", `{"turns":[{"delay":1}]}`, "turns[0]: empty turn"},
		{"bad error status", "json", `{"turns":[{"error":200}]}`, `turns[0]: "error": 200 is not an HTTP error status`},
		{"error with text", "yaml", "turns:\n- {error: 500, text: x}\n", "turns[0]: an error turn cannot also have"},
		{"args without tool", "json", `{"turns":[{"args":{}}]}`, `turns[0]: "args" without "tool"`},
		{"tool and tools", "json", `{"turns":[{"tool":"a","tools":[]}]}`, `turns[0]: use either "tool" or "tools"`},
		{"args must be object or string", "json", `{"turns":[{"tool":"a","args":[1]}]}`, "turns[0]: tool: args: want an object"},
		{"tool map with args", "json", `{"turns":[{"tool":{"a":{}},"args":{}}]}`, `inside the tool map`},
		{"tools entry without tool", "json", `{"turns":[{"tools":[{"args":{}}]}]}`, `turns[0]: tools[0]: missing "tool"`},
		{"negative delay", "json", `{"turns":[{"text":"a","delay":-1}]}`, "turns[0]: delay: must not be negative"},
		{"text must be a string", "json", `{"turns":[{"text":5}]}`, "turns[0]: text: want a string, got a number"},
		{"bad consume", "json", `{"consume":"some"}`, `consume: "some"`},
		{"relative cwd", "json", `{"cwd":"repo"}`, `cwd: "repo" is not absolute`},
		{"unknown top-level key", "json", `{"turn":[]}`, `unknown key "turn"`},
		{"match on default", "json", `{"default":{"text":"a","match":"x"}}`, `default: "match" only applies to turns`},
		{"duplicate key", "json", `{"turns":[{"tool":{"a":{},"a":{}}}]}`, `duplicate key "a"`},
		{"top level list", "yaml", "- text: a\n", "top level: want an object"},
		{"unknown format", "toml", `x = 1`, `unknown format "toml"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseScript([]byte(c.script), c.format)
			must(t, err != nil, "no error")
			must(t, strings.Contains(err.Error(), c.want), "error %q does not contain %q", err, c.want)
		})
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	y := filepath.Join(dir, "s.yml")
	if err := os.WriteFile(y, []byte("turns:\n  - text: hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadScript(y)
	must(t, err == nil && s.Turns[0].Text == "hi", "LoadScript yaml: %v", err)

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"turns":[{"text":"ok"},{"tool":""}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadScript(bad)
	must(t, err != nil && strings.Contains(err.Error(), bad) && strings.Contains(err.Error(), "turns[1]"), "error %v", err)

	_, err = LoadScript(filepath.Join(dir, "missing.json"))
	must(t, err != nil && os.IsNotExist(unwrapAll(err)), "missing file: %v", err)
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

func TestValidateProgrammaticScript(t *testing.T) {
	good := &Script{Turns: []Turn{{Text: "a", Calls: []ToolCall{{Options: []ToolOption{{Name: "x", Args: json.RawMessage(`{"a":1}`)}}}}}}}
	must(t, good.Validate() == nil, "valid script rejected: %v", good.Validate())
	bad := &Script{Turns: []Turn{{Calls: []ToolCall{{Options: []ToolOption{{Name: "x", Args: json.RawMessage(`[1]`)}}}}}}}
	err := bad.Validate()
	must(t, err != nil && strings.Contains(err.Error(), "turns[0]"), "error %v", err)
	_, err = New(Options{Script: bad})
	must(t, err != nil, "New accepted an invalid script")
}
