package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultScriptCoversEveryDemoKind(t *testing.T) {
	sc := DefaultScript()
	seen := map[string]bool{}
	var delay float64
	for _, st := range sc.Steps {
		seen[st.Kind()] = true
		if st.Delay != nil {
			delay += st.Delay.Seconds
		}
	}
	for _, k := range []string{KindText, KindThought, KindPlan, KindPlanStatus, KindRead, KindWrite, KindRun,
		KindCommands, KindSwitchMode, KindUsage, KindInfo, KindDelay} {
		if !seen[k] {
			t.Errorf("default script lacks a %s step", k)
		}
	}
	if delay > 1.0 {
		t.Errorf("default script delays add up to %.2fs; keep the demo quick", delay)
	}
}

func TestParseScriptForms(t *testing.T) {
	yamlSrc := `
early_updates: true
auth_methods: [{id: tok, name: Token}]
steps:
  - text: hello
    chunks: 2
  - read: notes.txt
  - write: {path: a.txt, content: x, ask: false}
  - run: {command: echo, args: [hi], output_limit: 10}
  - permission: {title: Deploy, kind: execute}
  - switch_mode: plan
  - delay: 0.5
  - usage: {used: 1, size: 2, cost: 0.5}
  - info: T
  - stop: max_tokens
  - crash: {code: 3, stderr: boom}
  - hang: true
  - garbage: "not json"
  - big: {bytes: 10}
  - late_updates: 2
  - outside: {path: /etc/hostname}
  - flood: {count: 5}
  - plan: [{content: a}]
  - plan_status: {entry: 0, status: completed}
  - commands: [{name: x, description: y}]
  - thought: hmm
`
	sc, err := ParseScript([]byte(yamlSrc))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.EarlyUpdates || len(sc.AuthMethods) != 1 || len(sc.Steps) != 21 {
		t.Fatalf("unexpected script: %+v", sc)
	}
	if sc.Steps[0].Text.Chunks != 2 || sc.Steps[1].Read.Path != "notes.txt" || *sc.Steps[2].Write.Ask {
		t.Errorf("bad decode: %+v %+v %+v", sc.Steps[0].Text, sc.Steps[1].Read, sc.Steps[2].Write)
	}
	if sc.Steps[10].Crash.Code != 3 || sc.Steps[13].Big.Bytes != 10 || sc.Steps[14].LateUpdates.Count != 2 {
		t.Errorf("bad decode of fault steps")
	}

	jsonSrc := `[{"text": "hi", "chunks": 2}, {"write": {"path": "a", "content": "b"}}, {"delay": 1}]`
	sc, err = ParseScript([]byte(jsonSrc))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Steps) != 3 || sc.Steps[2].Delay.Seconds != 1 {
		t.Fatalf("unexpected JSON script: %+v", sc)
	}
}

func TestParseScriptErrorsNameTheStep(t *testing.T) {
	cases := []struct{ src, want string }{
		{"- text: a\n- write: {path: a, contnet: b}\n", "steps[1] (write, line 2)"},
		{"- text: a\n- frobnicate: 1\n", `steps[1] (?, line 2): unknown key "frobnicate"`},
		{"- text: a\n  read: b\n", "steps[0] (?, line 1): a step has exactly one kind, got text and read"},
		{"steps:\n  - stop: whenever\n", "steps[0] (stop): stop reason \"whenever\""},
		{"steps:\n  - switch_mode: {to: yolo}\n", "steps[0] (switch_mode)"},
		{"steps:\n  - delay: soon\n", "steps[0] (delay, line 2)"},
		{"steps:\n  - plan: [{content: a, status: done}]\n", "steps[0] (plan): entry 0: status \"done\""},
		{"- read: {}\n", "steps[0] (read): path is required"},
		{"- write: {path: a}\n  chunks: 2\n", "chunks only applies to text and thought"},
		{"- hang: false\n", "hang must be true"},
		{`[{"text": "a"}, {"run": {"args": ["x"]}}]`, "steps[1] (run): command is required"},
		{"bogus: 1\n", "unknown key"},
		{"", "empty script"},
	}
	for _, c := range cases {
		_, err := ParseScript([]byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseScript(%q) = %v, want error containing %q", c.src, err, c.want)
		}
	}
}

func TestLoadScriptNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte("- usage: {used: -1, size: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadScript(p)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "steps[0] (usage)") {
		t.Fatalf("LoadScript error = %v", err)
	}
	if _, err := LoadScript(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("want error for a missing file")
	}
}
