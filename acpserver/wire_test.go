package acpserver

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/tai-dev/tai/driver"
)

// marshal is what encoding/json writes for v on a jsonrpc line.
func marshal(t testing.TB, v any) (string, bool) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", false
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), true
}

// checkParams: WriteParams writes what encoding/json writes, or declines.
func checkParams(t *testing.T, p updateParams) (wrote bool) {
	t.Helper()
	want, ok := marshal(t, p)
	var b bytes.Buffer
	if !p.WriteParams(&b) {
		return false
	}
	if !ok {
		t.Fatalf("wrote %s for a value encoding/json refuses", b.String())
	}
	if b.String() != want {
		t.Fatalf("WriteParams wrote\n%s\nencoding/json\n%s", b.String(), want)
	}
	return true
}

// Every update the updater makes is written as encoding/json writes it.
func TestUpdateParamsAsEncodingJSON(t *testing.T) {
	old := "old <b>&</b>\n"
	u := &updater{rawOK: true, tools: map[string]bool{}}
	u.newTurn()
	title := "A title"
	events := []driver.Event{
		{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: "plain"}},
		{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleThought, Text: "quote \" back \\ tab \t nul \x00 ctl \x1f del \x7f <html> & é 😀 \u2028 \u2029 bad \xff\xfe end"}},
		{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, Content: json.RawMessage(`{"type":"image","data":"AA=="}`)}},
		{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, Content: json.RawMessage(`{ "type" : "image" }`)}},
		{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t1", Title: "Write f.txt", Kind: driver.KindEdit, Status: "pending",
			Locations: []driver.Location{{Path: "/w/f.txt", Line: 3}, {Path: "/w/g.txt"}},
			Content: []driver.ToolContent{{Type: "diff", Path: "/w/f.txt", OldText: &old, NewText: "new"}, {Type: "diff", Path: "/w/n.txt", NewText: "x"},
				{Type: "text", Text: "said"}, {Type: "terminal"}, {Type: "image", Raw: json.RawMessage(`{"type":"image","data":"AA=="}`)},
				{Type: "other", Raw: json.RawMessage(`{"type":"other","n":1.5}`)}},
			RawInput: json.RawMessage(`{"path":"/w/f.txt","n":[1,2,{"a":null}]}`), RawOutput: json.RawMessage(`"ok"`)}},
		{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t1", Status: "completed", Kind: "weird-kind"}},
		{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t2", Kind: driver.KindEdit, RawInput: json.RawMessage(`{"file_path":"/w/a","content":"c"}`)}},
		{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t3", RawInput: json.RawMessage(`{ "spaced": true }`)}},
		{Type: driver.EventPlan, Plan: &driver.Plan{Entries: []driver.PlanEntry{{Content: "one", Priority: "high", Status: "completed"}, {Content: "two"}}}},
		{Type: driver.EventPlan, Plan: &driver.Plan{}},
		{Type: driver.EventModeChanged, Mode: &driver.Mode{ID: "plan"}},
		{Type: driver.EventCommands, Commands: []driver.Command{{Name: "web", Description: "Search", Hint: "query"}, {Name: "x"}}},
		{Type: driver.EventConfigOptions, Config: []driver.ConfigOption{{ID: "model", Type: "select", CurrentValue: json.RawMessage(`"a"`),
			Values: []driver.ConfigValue{{Value: "a", Name: "A"}, {Value: "b"}}}}},
		{Type: driver.EventSessionInfo, Info: &driver.SessionInfo{Title: &title}},
		{Type: driver.EventUsage, Usage: &driver.Usage{ContextUsed: 10, ContextSize: 100}},
		{Type: driver.EventUsage, Usage: &driver.Usage{ContextUsed: 10, ContextSize: 100, CostAmount: 0.25, Currency: "USD"}},
		{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "future", Data: json.RawMessage(`{"sessionUpdate":"future","n":1,"s":"x"}`)}},
		{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "future", Data: json.RawMessage(`{"sessionUpdate":"future","s":"x","b":true,"z":null}`)}},
	}
	wrote := 0
	for _, ev := range events {
		for _, up := range u.updates(ev) {
			if checkParams(t, updateParams{SessionID: "s-1 \"x\"", Update: up}) {
				wrote++
			}
		}
	}
	// The usage with a cost (a float), the raw updates with numbers and
	// the spaced raw values go to encoding/json; the rest is written.
	if wrote < len(events)-6 {
		t.Fatalf("only %d of the %d events' updates were written by hand", wrote, len(events))
	}
}

// Random updates of the value types updates hold, keys and strings of any
// bytes: written as encoding/json writes them, or declined.
func TestUpdateParamsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	str := func() string {
		const alphabet = "ab\"\\\x00\x1f\x7f<>&\xe2\x80\xa8\xff é"
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	var value func(depth int) any
	object := func(depth int) map[string]any {
		m := map[string]any{}
		for range rng.IntN(5) {
			m[str()] = value(depth + 1)
		}
		return m
	}
	value = func(depth int) any {
		switch k := rng.IntN(12); {
		case depth > 3 || k < 3:
			return str()
		case k == 3:
			return driver.ToolKind(str())
		case k == 4:
			return rng.IntN(2) == 0
		case k == 5:
			return rng.IntN(1000) - 500
		case k == 6:
			return []json.RawMessage{json.RawMessage(`{"a":[1,"x"]}`), json.RawMessage(`[ 1 ]`), nil}[rng.IntN(3)]
		case k == 7:
			var s []map[string]any
			for range rng.IntN(3) {
				s = append(s, object(depth+1))
			}
			return s
		case k == 8:
			var s []any
			for range rng.IntN(3) {
				s = append(s, value(depth+1))
			}
			return s
		case k == 9:
			return nil
		default:
			return object(depth)
		}
	}
	for range 5000 {
		m := map[string]any{"sessionUpdate": "x"}
		for range rng.IntN(6) {
			m[str()] = value(0)
		}
		checkParams(t, updateParams{SessionID: str(), Update: m})
	}
}
