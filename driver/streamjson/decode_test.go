package streamjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tai-dev/tai/driver"
)

var update = flag.Bool("update", false, "rewrite the decoder golden files (testdata/<dialect>/*.golden.json)")

// goldenFrame is a Frame as the golden files record it.
type goldenFrame struct {
	Line     int            `json:"line"`
	Events   []driver.Event `json:"events,omitempty"`
	Init     *Init          `json:"init,omitempty"`
	Mode     string         `json:"mode,omitempty"`
	Result   *Result        `json:"result,omitempty"`
	Control  string         `json:"control,omitempty"`
	CancelID string         `json:"cancel_id,omitempty"`
	Response string         `json:"response,omitempty"`
	Wrote    []Written      `json:"wrote,omitempty"`
}

// TestDecodeGolden decodes every wire capture in testdata/<dialect>/
// (the <scenario>.jsonl of claude, qwen, gemini, codex and opencode
// captured from the real CLIs by e2e/streamjson -update-wire; each doc.jsonl
// from the documented shapes) and compares the common events
// that come out with the golden file next to it.
func TestDecodeGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		dialect := filepath.Base(filepath.Dir(file))
		t.Run(dialect+"/"+strings.TrimSuffix(filepath.Base(file), ".jsonl"), func(t *testing.T) {
			if _, ok := LookupDialect(dialect); !ok {
				t.Fatalf("no dialect %q", dialect)
			}
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			d := newDecoder(dialect)
			var got []goldenFrame
			r := bufio.NewReader(f)
			for n := 1; ; n++ {
				line, err := r.ReadBytes('\n')
				if len(line) > 0 {
					fr := d.decode(line)
					g := goldenFrame{Line: n, Events: fr.Events, Init: fr.Init, Mode: fr.Mode, Result: fr.Result, CancelID: fr.CancelID, Wrote: fr.Wrote}
					if fr.Control != nil {
						g.Control = fr.Control.Subtype + " " + fr.Control.ID
					}
					if fr.Response != nil {
						g.Response = fr.Response.ID
					}
					for i := range g.Events {
						if g.Events[i].Type == driver.EventRaw {
							// Raw payloads are whole lines: the kind is enough.
							g.Events[i].Raw = &driver.RawUpdate{Kind: g.Events[i].Raw.Kind, Data: json.RawMessage(`"…"`)}
						}
					}
					got = append(got, g)
				}
				if err != nil {
					break
				}
			}
			out, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, '\n')
			golden := strings.TrimSuffix(file, ".jsonl") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(out, want) {
				t.Errorf("decoding %s differs from %s (run go test -update and review the diff):\n%s", file, golden, firstDiff(string(want), string(out)))
			}
		})
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return "line " + itoa(i+1) + ":\n- " + al[i] + "\n+ " + bl[i]
		}
	}
	return "lengths differ"
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestDecodeStopReasons pins the result mapping, the part exit codes hang on.
func TestDecodeStopReasons(t *testing.T) {
	tests := []struct {
		name, line string
		stop       string
		isError    bool
	}{
		{"success", `{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","terminal_reason":"completed"}`, driver.StopEndTurn, false},
		{"api error as success", `{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":529}`, StopError, true},
		{"max turns", `{"type":"result","subtype":"error_max_turns","is_error":true,"terminal_reason":"max_turns","stop_reason":"tool_use"}`, driver.StopMaxTurnRequests, true},
		{"aborted", `{"type":"result","subtype":"error_during_execution","is_error":true,"terminal_reason":"aborted_streaming"}`, driver.StopCancelled, true},
		{"budget", `{"type":"result","subtype":"error_max_budget_usd","is_error":false}`, StopError, true},
		{"max tokens", `{"type":"result","subtype":"success","is_error":false,"stop_reason":"max_tokens"}`, driver.StopMaxTokens, false},
		{"refusal", `{"type":"result","subtype":"success","is_error":false,"stop_reason":"refusal"}`, driver.StopRefusal, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := DecodeLine(DialectClaude, []byte(tt.line)).Result
			if r == nil || r.StopReason != tt.stop || r.IsError != tt.isError {
				t.Fatalf("result = %+v, want stop %s is_error %v", r, tt.stop, tt.isError)
			}
		})
	}
}

// FuzzDecodeLine: no line, in any dialect, panics the decoder or is
// silently dropped when it is not JSON.
func FuzzDecodeLine(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.jsonl"))
	for _, file := range files {
		b, _ := os.ReadFile(file)
		for _, line := range bytes.Split(b, []byte("\n")) {
			if len(line) < 4096 {
				f.Add(line)
			}
		}
	}
	f.Add([]byte("not json"))
	f.Add([]byte(`{"type":`))
	f.Add([]byte(`{"type":"result","modelUsage":{"m":{"inputTokens":-1}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, d := range Dialects() {
			dec := newDecoder(d)
			fr := dec.decode(line)
			fr2 := dec.decode(line) // stateful paths: the same line twice
			trimmed := bytes.TrimSpace(line)
			if len(trimmed) > 0 && !json.Valid(trimmed) {
				if len(fr.Events) != 1 || fr.Events[0].Type != driver.EventRaw {
					t.Fatalf("%s: a non-JSON line gave %+v, want one raw event", d, fr.Events)
				}
			}
			for _, ev := range append(fr.Events, fr2.Events...) {
				if _, err := json.Marshal(ev); err != nil && utf8.Valid(line) {
					t.Fatalf("%s: event does not marshal: %v", d, err)
				}
			}
		}
	})
}

// TestDecodeFileWrites: each dialect's write tools report their files once
// their result came back without an error, and only then.
func TestDecodeFileWrites(t *testing.T) {
	tests := []struct {
		dialect string
		name    string
		lines   []string
		want    []Written
	}{
		{DialectClaude, "write", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"/w/a.txt","content":"x"}}]}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"tool_use_result":{"type":"create","filePath":"/w/a.txt"}}`,
		}, []Written{{Path: "/w/a.txt", Created: true}}},
		{DialectClaude, "edit", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":"/w/a.txt","old_string":"x","new_string":"y"}}]}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"tool_use_result":{"filePath":"/w/a.txt"}}`,
		}, []Written{{Path: "/w/a.txt"}}},
		{DialectClaude, "failed write", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"/w/a.txt","content":"x"}}]}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"denied","is_error":true}]}}`,
		}, nil},
		{DialectClaude, "not a write", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/w/a.txt"}}]}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}`,
		}, nil},
		{DialectQwen, "write_file", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"c1","name":"write_file","input":{"file_path":"/w/a.txt","content":"x"}}]}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":false,"content":"ok"}]}}`,
		}, []Written{{Path: "/w/a.txt"}}},
		{DialectQwen, "edit twice upserted", []string{
			`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"c1","name":"edit","input":{"file_path":"/w/a.txt"}}]}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":false,"content":"ok"}]}}`,
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","is_error":false,"content":"ok"}]}}`,
		}, []Written{{Path: "/w/a.txt"}}},
		{DialectGemini, "write_file", []string{
			`{"type":"tool_use","tool_name":"write_file","tool_id":"w1","parameters":{"file_path":"/w/a.txt","content":"x"}}`,
			`{"type":"tool_result","tool_id":"w1","status":"success","output":"ok"}`,
		}, []Written{{Path: "/w/a.txt"}}},
		{DialectGemini, "failed replace", []string{
			`{"type":"tool_use","tool_name":"replace","tool_id":"w1","parameters":{"file_path":"/w/a.txt"}}`,
			`{"type":"tool_result","tool_id":"w1","status":"error","error":{"type":"x","message":"no match"}}`,
		}, nil},
		{DialectCodex, "file_change", []string{
			`{"type":"item.started","item":{"id":"i1","type":"file_change","changes":[{"path":"/w/a.txt","kind":"add"},{"path":"/w/b.txt","kind":"update"}],"status":"in_progress"}}`,
			`{"type":"item.completed","item":{"id":"i1","type":"file_change","changes":[{"path":"/w/a.txt","kind":"add"},{"path":"/w/b.txt","kind":"update"}],"status":"completed"}}`,
		}, []Written{{Path: "/w/a.txt", Created: true}, {Path: "/w/b.txt"}}},
		{DialectCodex, "failed file_change", []string{
			`{"type":"item.completed","item":{"id":"i1","type":"file_change","changes":[{"path":"/w/a.txt","kind":"add"}],"status":"failed"}}`,
		}, nil},
		{DialectOpenCode, "write", []string{
			`{"type":"tool_use","sessionID":"s","part":{"tool":"write","callID":"c1","state":{"status":"completed","input":{"filePath":"/w/a.txt","content":"x"},"output":"ok"}}}`,
		}, []Written{{Path: "/w/a.txt"}}},
		{DialectOpenCode, "rejected edit", []string{
			`{"type":"tool_use","sessionID":"s","part":{"tool":"edit","callID":"c1","state":{"status":"error","input":{"filePath":"/w/a.txt"},"error":"The user rejected permission to use this specific tool call."}}}`,
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+"/"+tt.name, func(t *testing.T) {
			d := newDecoder(tt.dialect)
			var got []Written
			for _, l := range tt.lines {
				got = append(got, d.decode([]byte(l)).Wrote...)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("wrote %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A turn that ends on an error after a rejected rate_limit_event (the
// claude CLI at its usage limit; claude-agent-sdk 0.101.0's
// SDKRateLimitEvent) carries that rate_limit_info, which says when the
// limit resets; one that an allowed event followed, or a success, does
// not.
func TestDecodeRateLimitRejection(t *testing.T) {
	const rejected = `{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796652000,"rateLimitType":"five_hour"},"uuid":"u","session_id":"s"}`
	const allowed = `{"type":"rate_limit_event","rate_limit_info":{"status":"allowed"},"uuid":"u","session_id":"s"}`
	const failed = `{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":429,"result":"You've hit your limit · resets 3pm"}`
	const ok = `{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn"}`
	tests := []struct {
		name  string
		lines []string
		want  bool
	}{
		{"rejected then error", []string{rejected, failed}, true},
		{"allowed again", []string{rejected, allowed, failed}, false},
		{"rejected then success", []string{rejected, ok}, false},
		{"error alone", []string{failed}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDecoder(DialectClaude)
			var r *Result
			for _, l := range tt.lines {
				if f := d.decode([]byte(l)); f.Result != nil {
					r = f.Result
				}
			}
			if r == nil || (r.RateLimit != nil) != tt.want {
				t.Fatalf("result %+v, want rate limit %v", r, tt.want)
			}
		})
	}
}
