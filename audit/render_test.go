package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// alignedLog is a fleet's log with what pushed Render's columns apart:
// long task ids, the longest kinds, a kind from a newer tai, a sequence
// number past six digits.
func alignedLog() []byte {
	var b bytes.Buffer
	for i, e := range []struct{ seq, task, session, kind, data string }{
		{"1", "", "", KindRunStart, `{"version":"1.0"}`},
		{"2", "api", "builtin-4d37a8dc0000", KindSessionStart, `{"agent":"builtin"}`},
		{"3", "frontend-login-form-with-validation", "builtin-aaaabbbb0000", KindElicitationComplete, `{"elicitation_id":"e-1"}`},
		{"4", "frontend-logout-form-with-validation", "builtin-ccccdddd0000", KindPermissionDecision, `{"decision":"allow","option":"allow_once","decided_by":"human"}`},
		{"5", "a-task-id-that-goes-on-and-on-far-longer-than-anyone-would-write", "builtin-99998888", KindTurnEnd, `{"stop_reason":"end_turn"}`},
		{"6", "docs", "claude-eeeeffff0000", "x.a.kind.from.a.newer.tai.than.this.one", `{"n":1}`},
		{"1234567", "", "", KindRunEnd, `{"status":"ok"}`},
	} {
		fmt.Fprintf(&b, `{"seq":%s,"ts":"2026-12-01T10:00:0%dZ","kind":%q,"session":%q,"task":%q,"data":%s,"prev":"","hash":""}`+"\n", e.seq, i, e.kind, e.session, e.task, e.data)
	}
	return b.Bytes()
}

// The summaries start in one column on every line, from a file (widths
// measured) and from a pipe (widths that fit every kind tai writes); the
// file's rendering is golden.
func TestRenderAligned(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fleet.jsonl")
	if err := os.WriteFile(p, alignedLog(), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var file, pipe strings.Builder
	must(t, Render(&file, f, Filter{}))
	must(t, Render(&pipe, struct{ *bytes.Reader }{bytes.NewReader(alignedLog())}, Filter{})) // no Seek: a pipe
	for name, out := range map[string]string{"file": file.String(), "pipe": pipe.String()} {
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 7 {
			t.Fatalf("%s: %d lines:\n%s", name, len(lines), out)
		}
		// Where each line's summary starts: after the kind column's padding.
		col := -1
		for _, l := range lines {
			fields := strings.Fields(l) // time, seq, session, kind, summary...
			if len(fields) < 5 {
				t.Fatalf("%s: a line without its summary: %q", name, l)
			}
			k := strings.Index(l, " "+fields[3]+" ") + len(fields[3]) + 1
			c := utf8.RuneCountInString(l[:k+strings.Index(l[k:], fields[4])])
			if col == -1 {
				col = c
			}
			if c != col {
				t.Errorf("%s: the columns do not line up:\n%s", name, out)
				break
			}
		}
	}
	if !strings.Contains(file.String(), "frontend-login-form-with-validation/aaaabbbb ") || !strings.Contains(file.String(), "a-task-id-that-goes…-anyone-would-write/99998888 ") ||
		!strings.Contains(file.String(), "elicitation.complete ") {
		t.Errorf("long task ids are not cut in their middle, or a kind tai writes is cut:\n%s", file.String())
	}
	golden := filepath.Join("testdata", "render-aligned.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		must(t, os.WriteFile(golden, []byte(file.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 go test ./audit -run TestRenderAligned)", err)
	}
	if file.String() != string(want) {
		t.Errorf("differs from %s:\n%s", golden, file.String())
	}
}
