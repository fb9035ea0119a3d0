package quota_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/quota"
)

// turnEnd is how one session/prompt ended in a wire transcript: the
// agent's JSON-RPC error, or its stop reason and the text of its message.
type turnEnd struct {
	err        *driver.RemoteError
	stopReason string
	message    string
	// notice is the _meta of the turn's last session_info_update with
	// one, unless a message came after it.
	notice map[string]any
}

// promptEnds reads a transcript (`tai run --trace`, as e2e/realagents
// saves it) and returns how each of its prompts ended.
func promptEnds(t *testing.T, path string) []turnEnd {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Update struct {
				SessionUpdate string          `json:"sessionUpdate"`
				Content       json.RawMessage `json:"content"` // a tool call's is a list
				Meta          map[string]any  `json:"_meta"`
			} `json:"update"`
		} `json:"params"`
		Result *struct {
			StopReason string `json:"stopReason"`
		} `json:"result"`
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	var ends []turnEnd
	prompts := map[string]bool{}
	var text strings.Builder
	var notice map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Dir  string `json:"dir"`
			Line msg    `json:"line"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		m := e.Line
		switch {
		case e.Dir == "out" && m.Method == "session/prompt":
			prompts[string(m.ID)] = true
			text.Reset()
			notice = nil
		case e.Dir == "in" && m.Method == "session/update" && m.Params.Update.SessionUpdate == "session_info_update" && m.Params.Update.Meta != nil:
			if _, ok := quota.FromRetryNotice(m.Params.Update.Meta, time.Time{}); ok {
				notice = m.Params.Update.Meta
			}
		case e.Dir == "in" && m.Method == "session/update" && m.Params.Update.SessionUpdate == "agent_message_chunk":
			var c struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(m.Params.Update.Content, &c); err != nil {
				t.Fatalf("%s: an agent_message_chunk's content: %v", path, err)
			}
			text.WriteString(c.Text)
			notice = nil
		case e.Dir == "in" && m.Method == "" && prompts[string(m.ID)]:
			switch {
			case m.Error != nil:
				ends = append(ends, turnEnd{err: &driver.RemoteError{Method: "session/prompt", Code: m.Error.Code, Message: m.Error.Message, Data: m.Error.Data}})
			case m.Result != nil:
				ends = append(ends, turnEnd{stopReason: m.Result.StopReason, message: text.String(), notice: notice})
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ends
}

// limitOf is what tai's runner reads from a turn's end: the error, the
// message of a turn that ended normally, or the retry notice a turn tai
// cancelled was left on (after the runner's grace).
func limitOf(end turnEnd, now time.Time) (quota.Limit, bool) {
	switch {
	case end.err != nil:
		return quota.FromError(end.err, now)
	case end.stopReason == driver.StopEndTurn:
		return quota.FromFinalMessage(end.message, now)
	case end.stopReason == driver.StopCancelled && end.notice != nil:
		return quota.FromRetryNotice(end.notice, now)
	}
	return quota.Limit{}, false
}

// Each agent's real output at the model server's limit (testdata,
// recorded by go test ./e2e/realagents -run ParkAtLimit -update-quota) is
// a limit of the right kind, read from the right signal, with the reset
// the 429 announced where the agent passes it on.
func TestRealAgentFixtures(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		file   string
		kind   quota.Kind
		source string
		resets time.Time
	}{
		// The CLI's "API Error: Request rejected (429)" with errorKind.
		{"claude-0.101.0.jsonl", quota.KindRate, "acp_error", time.Time{}},
		// end_turn, "exceeded retry limit, last status: 429 Too Many
		// Requests" after five session_info_update _meta.codex.error.
		{"codex-2.6.0.jsonl", quota.KindRate, "final_message", time.Time{}},
		// An hour's Retry-After: one "Reconnecting... 1/5" notice, then
		// silence until tai's session/cancel after its grace.
		{"codex-2.6.0-long-retry-after.jsonl", quota.KindRate, "retry_notice", time.Time{}},
		// JSON-RPC code 429, "Suggested retry after 1s." (the RetryInfo).
		{"gemini-0.61.0.jsonl", quota.KindRate, "acp_error", now.Add(time.Second)},
		// JSON-RPC code 429, "Rate limit exceeded. Try again later."
		{"qwen-0.24.4.jsonl", quota.KindRate, "acp_error", time.Time{}},
		// -32603 with the provider's message, data errorName APIError.
		{"opencode-1.18.33.jsonl", quota.KindRate, "acp_error", time.Time{}},
		// end_turn, "Error: Failed to get response from the AI model; …
		// Last error: 429 …".
		{"copilot-1.0.102.jsonl", quota.KindRate, "final_message", time.Time{}},
		// An hour's Retry-After: no retry, end_turn with "Error: 429 …".
		{"copilot-1.0.102-long-retry-after.jsonl", quota.KindRate, "final_message", time.Time{}},
		// A ChatGPT plan's usage_limit_reached: no retry, -32603 "Internal
		// error" with data {message: "You’ve hit your usage limit … try
		// again at 2:14 PM.", codexErrorInfo: usageLimitExceeded}.
		{"codex-2.6.0-plan.jsonl", quota.KindUsage, "acp_error", time.Date(2026, 12, 7, 14, 14, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			ends := promptEnds(t, filepath.Join("testdata", tt.file))
			if len(ends) != 1 {
				t.Fatalf("%d prompts ended in the fixture, want 1", len(ends))
			}
			l, ok := limitOf(ends[0], now)
			if !ok {
				t.Fatalf("no limit in %+v", ends[0])
			}
			if l.Kind != tt.kind || l.Source != tt.source || !l.ResetsAt.Equal(tt.resets) {
				t.Fatalf("limit %+v; want kind %s, source %s, resets %v", l, tt.kind, tt.source, tt.resets)
			}
		})
	}
}

// The same agents' ordinary turns (driver/acp's wire goldens: read, write,
// run a command, answer) are no limit: the final message rule does not
// take an answer for one.
func TestRealAgentTurnsAreNoLimit(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "driver", "acp", "testdata", "wire", "*.jsonl"))
	if len(files) == 0 {
		t.Fatal("no wire goldens")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			for _, end := range promptEnds(t, f) {
				if l, ok := limitOf(end, time.Now()); ok {
					t.Errorf("turn %+v taken for a limit: %+v", end, l)
				}
			}
		})
	}
}

func TestFromFinalMessage(t *testing.T) {
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name, text string
		ok         bool
	}{
		{"codex", "exceeded retry limit, last status: 429 Too Many Requests\n\n", true},
		{"copilot at once", "Error: 429 Rate limit exceeded.", true},
		{"copilot", "Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 5.43 seconds) Last error: 429 Rate limit exceeded.", true},
		{"an answer about 429", "HTTP 429 Too Many Requests means you hit a rate limit; back off and retry.", false},
		{"an answer quoting codex later", "When codex says \"exceeded retry limit, last status: 429\" it gave up.", false},
		{"another status", "Error: Failed to get response from the AI model; retried 5 times Last error: 500 Internal Server Error", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := quota.FromFinalMessage(tt.text, now); ok != tt.ok {
				t.Fatalf("FromFinalMessage(%q) ok = %v, want %v", tt.text, ok, tt.ok)
			}
		})
	}
}
