package capspeak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// outLines collects what the Conn writes.
type outLines struct {
	mu  sync.Mutex
	out []map[string]any
	got chan map[string]any
}

func newOutLines() *outLines { return &outLines{got: make(chan map[string]any, 64)} }

func (l *outLines) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	l.mu.Lock()
	l.out = append(l.out, m)
	l.mu.Unlock()
	l.got <- m
	return nil
}

// warnings counts the Conn's warnings: an input line it did not take.
type warnings struct{ n int }

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.n++
	}
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// Every input line cap.md shows is one tai takes without a warning.
func TestCapMdInputExamples(t *testing.T) {
	doc, err := os.ReadFile("../cap.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```jsonl cap-speak-input\n")
	if !ok {
		t.Fatal("cap.md has no cap-speak-input block")
	}
	block, _, _ := strings.Cut(rest, "```")
	out := newOutLines()
	w := &warnings{}
	c := New(out, slog.New(w), "test")
	go func() {
		for range c.Turns() {
		}
	}()
	if err := c.Serve(context.Background(), strings.NewReader(block)); err != nil {
		t.Fatal(err)
	}
	if w.n != 0 {
		t.Fatalf("%d of cap.md's input outLines were not understood", w.n)
	}
}

func TestServe(t *testing.T) {
	input := strings.Join([]string{
		`{"type":"control_request","request_id":"i","request":{"subtype":"initialize"}}`,
		`{"type":"user","message":{"role":"user","content":"one"}}`,
		`not json`,
		`{"type":"user","message":{"role":"user","content":[{"type":"image","source":{}},{"type":"text","text":"two"}]}}`,
		`{"type":"user","message":{"role":"user","content":""}}`,
		`{"type":"something_newer","x":1}`,
		`{"type":"control_request","request_id":"x","request":{"subtype":"set_model","model":"m"}}`,
		`{"type":"control_request","request_id":"int","request":{"subtype":"interrupt"}}`,
		strings.Repeat("x", 200) + "\n" + `{"type":"user","message":{"role":"user","content":"three"}}`,
	}, "\n")
	out := newOutLines()
	c := New(out, nil, "v1")
	var turns []string
	done := make(chan struct{})
	go func() {
		for p := range c.Turns() {
			turns = append(turns, p[0].Text)
		}
		close(done)
	}()
	if err := c.Serve(context.Background(), strings.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	<-done
	if strings.Join(turns, ",") != "one,two,three" {
		t.Fatalf("turns %q", turns)
	}
	select {
	case <-c.Interrupts():
	default:
		t.Fatal("the interrupt did not fire")
	}
	var subtypes []string
	for _, m := range out.out {
		r := m["response"].(map[string]any)
		subtypes = append(subtypes, r["request_id"].(string)+":"+r["subtype"].(string))
	}
	if strings.Join(subtypes, " ") != "i:success x:error int:success" {
		t.Fatalf("control responses %v", subtypes)
	}
}

func TestOversizedLineSkipped(t *testing.T) {
	big := bytes.Repeat([]byte("y"), MaxLine+10)
	in := io.MultiReader(bytes.NewReader(big), strings.NewReader("\n"+`{"type":"user","message":{"role":"user","content":"after"}}`+"\n"))
	c := New(newOutLines(), nil, "v")
	var got []string
	done := make(chan struct{})
	go func() {
		for p := range c.Turns() {
			got = append(got, p[0].Text)
		}
		close(done)
	}()
	if err := c.Serve(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	<-done
	if len(got) != 1 || got[0] != "after" {
		t.Fatalf("turns after an oversized line: %q", got)
	}
}

// Ask goes to the parent as can_use_tool and waits for its answer; with
// the input ended it abstains.
func TestAsk(t *testing.T) {
	for _, tc := range []struct {
		name     string
		response string
		want     policy.Answer
		err      bool
	}{
		{"allow", `{"subtype":"success","request_id":"tai-1","response":{"behavior":"allow"}}`, policy.AllowOnce, false},
		{"deny", `{"subtype":"success","request_id":"tai-1","response":{"behavior":"deny","message":"no"}}`, policy.DenyOnce, false},
		{"error", `{"subtype":"error","request_id":"tai-1","error":"cannot"}`, 0, true},
		{"nonsense", `{"subtype":"success","request_id":"tai-1","response":{"behavior":"maybe"}}`, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := newOutLines()
			c := New(out, nil, "v")
			pr, pw := io.Pipe()
			go func() { _ = c.Serve(context.Background(), pr) }()
			defer pw.Close()
			type res struct {
				a   policy.Answer
				err error
			}
			got := make(chan res, 1)
			go func() {
				a, err := c.Ask(context.Background(), driver.PermissionRequest{ID: "1",
					ToolCall: driver.ToolCall{ID: "tc", Title: "Write x", Kind: "edit", RawInput: json.RawMessage(`{"path":"x"}`)}})
				got <- res{a, err}
			}()
			req := <-out.got
			r := req["request"].(map[string]any)
			if req["type"] != "control_request" || r["subtype"] != "can_use_tool" || r["tool_name"] != "Write x" || req["request_id"] != "tai-1" {
				t.Fatalf("asked %v", req)
			}
			_, _ = io.WriteString(pw, `{"type":"control_response","response":`+tc.response+"}\n")
			g := <-got
			if (g.err != nil) != tc.err || !tc.err && g.a != tc.want {
				t.Fatalf("answer %v, %v", g.a, g.err)
			}
		})
	}
	t.Run("input ended", func(t *testing.T) {
		c := New(newOutLines(), nil, "v")
		go func() {
			for range c.Turns() {
			}
		}()
		_ = c.Serve(context.Background(), strings.NewReader(""))
		if _, err := c.Ask(context.Background(), driver.PermissionRequest{}); !errors.Is(err, policy.ErrNoAnswer) {
			t.Fatalf("ask after the input ended: %v", err)
		}
	})
	t.Run("input ends while asking", func(t *testing.T) {
		out := newOutLines()
		c := New(out, nil, "v")
		pr, pw := io.Pipe()
		go func() {
			for range c.Turns() {
			}
		}()
		go func() { _ = c.Serve(context.Background(), pr) }()
		errc := make(chan error, 1)
		go func() {
			_, err := c.Ask(context.Background(), driver.PermissionRequest{})
			errc <- err
		}()
		<-out.got
		pw.Close()
		if err := <-errc; !errors.Is(err, policy.ErrNoAnswer) {
			t.Fatalf("pending ask when the input ended: %v", err)
		}
	})
}
