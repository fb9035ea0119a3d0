package a2a

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/quota"
)

// limitNow is the sessions' clock in these tests: relative reset times
// ("Retry-After: 120") count from it.
var limitNow = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func launchAt(t *testing.T, url string) *Session {
	t.Helper()
	clk := quartz.NewMock(t)
	clk.Set(limitNow)
	s, err := Start(t.Context(), driver.Launch{Argv: []string{url}, Agent: "peer", Clock: clk, Host: driver.Host{Sink: &sink{}}},
		Options{PollInterval: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(t.Context()) })
	return s
}

// refuse answers with an HTTP status and, when given, Retry-After.
func refuse(w *rpcWriter, code int, retry string) {
	if retry != "" {
		w.w.Header().Set("Retry-After", retry)
	}
	http.Error(w.w, http.StatusText(code), code)
}

func textPart(s string) []any { return []any{map[string]any{"kind": "text", "text": s}} }

// task03 is a 0.3 task in state with a status message and metadata.
func task03(id, state, text string, taskMeta, msgMeta map[string]any) map[string]any {
	st := map[string]any{"state": state}
	if text != "" {
		m := map[string]any{"kind": "message", "messageId": "m-" + id, "role": "agent", "parts": textPart(text)}
		if msgMeta != nil {
			m["metadata"] = msgMeta
		}
		st["message"] = m
	}
	tk := map[string]any{"kind": "task", "id": id, "contextId": "ctx", "status": st}
	if taskMeta != nil {
		tk["metadata"] = taskMeta
	}
	return tk
}

// Every A2A limit signal reaches the runner as a limit with its reset:
// an HTTP 429 (or a 503 with Retry-After) on any call, a JSON-RPC error
// that names one, a task that ends failed or rejected saying so in its
// status message or metadata. What the runner reads is quota.FromError of
// the turn's error, as here; what is not a limit stays a plain failure.
func TestLimitSignals(t *testing.T) {
	tests := []struct {
		name      string
		streaming bool
		handle    func(w *rpcWriter, c call, n int)
		ok        bool
		kind      quota.Kind
		source    string
		resets    time.Time
		methods   []string
	}{
		{"429 Retry-After seconds on message/send", false, func(w *rpcWriter, c call, n int) { refuse(w, 429, "120") },
			true, quota.KindRate, "http_429", limitNow.Add(2 * time.Minute), []string{"message/send"}},
		{"429 Retry-After date on message/stream", true, func(w *rpcWriter, c call, n int) { refuse(w, 429, "Mon, 07 Dec 2026 11:30:00 GMT") },
			true, quota.KindRate, "http_429", time.Date(2026, 12, 7, 11, 30, 0, 0, time.UTC), []string{"message/stream"}},
		{"503 Retry-After", false, func(w *rpcWriter, c call, n int) { refuse(w, 503, "60") },
			true, quota.KindRate, "http_503", limitNow.Add(time.Minute), []string{"message/send"}},
		{"429 on tasks/get is not retried", false, func(w *rpcWriter, c call, n int) {
			if c.Method == "message/send" {
				w.result(task03("t", "working", "", nil, nil))
				return
			}
			refuse(w, 429, "30")
		}, true, quota.KindRate, "http_429", limitNow.Add(30 * time.Second), []string{"message/send", "tasks/get"}},
		{"JSON-RPC error data names it", false, func(w *rpcWriter, c call, n int) {
			w.w.Header().Set("Content-Type", "application/json")
			_, _ = w.w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"slow down","data":{"errorKind":"rate_limit","retryAfter":45}}}`))
		}, true, quota.KindRate, "acp_error", limitNow.Add(45 * time.Second), []string{"message/send"}},
		{"JSON-RPC code 429", false, func(w *rpcWriter, c call, n int) { w.error(429, "Too many requests, retry in 5m") },
			true, quota.KindRate, "acp_error", limitNow.Add(5 * time.Minute), []string{"message/send"}},
		{"JSON-RPC usage message", false, func(w *rpcWriter, c call, n int) {
			w.error(-32603, "You've hit your usage limit. Try again at 3:15 PM.")
		},
			true, quota.KindUsage, "acp_error", time.Date(2026, 12, 7, 15, 15, 0, 0, time.UTC), []string{"message/send"}},
		{"failed task, reset in its message's metadata", false, func(w *rpcWriter, c call, n int) {
			w.result(task03("t", "failed", "Rate limit exceeded", nil, map[string]any{"resetsAt": "2026-12-07T12:00:00Z"}))
		}, true, quota.KindRate, "fields", time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), []string{"message/send"}},
		{"failed task, kind and retryAfter in the task's metadata", false, func(w *rpcWriter, c call, n int) {
			w.result(task03("t", "failed", "stopped", map[string]any{"errorKind": "usage_limit", "retryAfter": 600}, nil))
		}, true, quota.KindUsage, "fields", limitNow.Add(10 * time.Minute), []string{"message/send"}},
		{"rejected task, reset in its text", true, func(w *rpcWriter, c call, n int) {
			w.stream(task03("t", "submitted", "", nil, nil), map[string]any{"kind": "status-update", "taskId": "t", "contextId": "ctx", "final": true,
				"status": map[string]any{"state": "rejected", "message": map[string]any{"kind": "message", "messageId": "m", "role": "agent",
					"parts": textPart("You've reached your usage limit · resets 3pm (UTC)")}}})
		}, true, quota.KindUsage, "fields", time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC), []string{"message/stream"}},
		{"failed task whose id holds 429 is no limit", false, func(w *rpcWriter, c call, n int) {
			w.result(task03("5f429c1e-0000-4000-8000-000000000000", "failed", "boom", nil, nil))
		}, false, "", "", time.Time{}, []string{"message/send"}},
		{"503 without Retry-After is an outage", false, func(w *rpcWriter, c call, n int) { refuse(w, 503, "") },
			false, "", "", time.Time{}, []string{"message/send"}},
		{"500 is an error", false, func(w *rpcWriter, c call, n int) { refuse(w, 500, "30") },
			false, "", "", time.Time{}, []string{"message/send"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card := map[string]any{"name": "s", "protocolVersion": "0.3.0", "url": "", "capabilities": map[string]any{"streaming": tt.streaming}}
			s := newScripted(t, CardPath, card, tt.handle)
			sess := launchAt(t, s.srv.URL)
			// A hang guard only: a limit retried on the mock clock would wait forever.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			_, err := sess.Prompt(ctx, []driver.Content{driver.TextContent("go")})
			if err == nil {
				t.Fatal("the turn did not fail")
			}
			l, ok := quota.FromError(err, limitNow)
			if ok != tt.ok {
				t.Fatalf("limit %v (%+v), want %v; err %v", ok, l, tt.ok, err)
			}
			if ok && (l.Kind != tt.kind || l.Source != tt.source || !l.ResetsAt.Equal(tt.resets)) {
				t.Errorf("limit %+v; want %s from %s resetting %v", l, tt.kind, tt.source, tt.resets)
			}
			if got := s.methods(); !slices.Equal(got, tt.methods) {
				t.Errorf("calls %q, want %q", got, tt.methods)
			}
		})
	}
}

// A prompt the agent refused at its limit before it took it (no task,
// no context) goes out again with the next prompt, the runner's continue
// prompt after the reset: the resume does not lose the task. A limit met
// after the agent took the prompt (a failed task) sends only the new one.
func TestRefusedPromptIsSentAgain(t *testing.T) {
	tests := []struct {
		name  string
		first func(w *rpcWriter)
		want  []string // the second message's text parts
	}{
		{"refused by a 429", func(w *rpcWriter) { refuse(w, 429, "1") }, []string{"build the thing", "continue"}},
		{"refused by a JSON-RPC error", func(w *rpcWriter) { w.error(-32000, "rate limit exceeded") }, []string{"build the thing", "continue"}},
		{"taken, then failed at the limit", func(w *rpcWriter) { w.result(task03("t1", "failed", "Rate limit exceeded", nil, nil)) }, []string{"continue"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card := map[string]any{"name": "s", "protocolVersion": "0.3.0", "url": ""}
			s := newScripted(t, CardPath, card, func(w *rpcWriter, c call, n int) {
				if n == 0 {
					tt.first(w)
					return
				}
				w.result(map[string]any{"kind": "message", "messageId": "m", "role": "agent", "contextId": "ctx", "parts": textPart("done")})
			})
			sess := launchAt(t, s.srv.URL)
			if _, err := prompt(t, sess, "build the thing"); err == nil {
				t.Fatal("the first turn did not fail")
			} else if _, ok := quota.FromError(err, limitNow); !ok {
				t.Fatalf("not a limit: %v", err)
			}
			if res, err := prompt(t, sess, "continue"); err != nil || res.StopReason != driver.StopEndTurn {
				t.Fatalf("second turn %+v, %v", res, err)
			}
			var got []string
			for _, p := range s.call(1).Params["message"].(map[string]any)["parts"].([]any) {
				got = append(got, p.(map[string]any)["text"].(string))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("second message %q, want %q", got, tt.want)
			}
			// And only once: a third prompt carries itself alone.
			if _, err := prompt(t, sess, "more"); err != nil {
				t.Fatal(err)
			}
			if parts := s.call(2).Params["message"].(map[string]any)["parts"].([]any); len(parts) != 1 {
				t.Errorf("third message %v", parts)
			}
		})
	}
}

// A task error is not read again by quota.FromError's text fallback: the
// driver already looked.
func TestTaskErrorIsChecked(t *testing.T) {
	err := &TaskError{TaskID: "a-429-b", State: StateFailed, Message: "boom"}
	if _, ok := quota.FromError(err, limitNow); ok {
		t.Fatal("a failed task with 429 in its id read as a limit")
	}
	var c quota.Checked
	if !errors.As(err, &c) {
		t.Fatal("TaskError is not quota.Checked")
	}
}
