package acpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/protocol/acp"
)

func TestUpdates(t *testing.T) {
	old := "a"
	for _, tc := range []struct {
		name  string
		rawOK bool
		evs   []driver.Event
		want  []string // each update as JSON, in order
	}{
		{"message chunks", false, []driver.Event{
			{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: "hi"}},
			{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleThought, Text: "hm"}},
		}, []string{
			`{"content":{"text":"hi","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
			`{"content":{"text":"hm","type":"text"},"sessionUpdate":"agent_thought_chunk"}`,
		}},
		{"a screen's message is sent as what is new", false, []driver.Event{
			{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: "m", Text: "Hel", Replace: true}},
			{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: "m", Text: "Hello", Replace: true}},
			{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: "m", Text: "Help", Replace: true}},
		}, []string{
			`{"content":{"text":"Hel","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
			`{"content":{"text":"lo","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
		}},
		{"tool call then its update, with diff, location, kind", false, []driver.Event{
			{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t1", Title: "Write f", Kind: "edit", Status: "pending",
				Locations: []driver.Location{{Path: "/w/f", Line: 3}},
				Content:   []driver.ToolContent{{Type: "diff", Path: "/w/f", OldText: &old, NewText: "b"}, {Type: "terminal", TerminalID: "x"}}}},
			{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "t1", Kind: "weird", Status: "done?"}},
		}, []string{
			`{"content":[{"newText":"b","oldText":"a","path":"/w/f","type":"diff"}],"kind":"edit","locations":[{"line":3,"path":"/w/f"}],"sessionUpdate":"tool_call","status":"pending","title":"Write f","toolCallId":"t1"}`,
			`{"kind":"other","sessionUpdate":"tool_call_update","toolCallId":"t1"}`,
		}},
		{"a CLI's own Write shows its diff", false, []driver.Event{
			{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "w", Title: "Write", Kind: "edit", RawInput: json.RawMessage(`{"file_path":"/w/h","content":"x"}`)}},
			{Type: driver.EventToolCall, ToolCall: &driver.ToolCall{ID: "e", Title: "Edit", Kind: "edit", RawInput: json.RawMessage(`{"file_path":"/w/h","old_string":"x","new_string":"y"}`)}},
		}, []string{
			`{"content":[{"newText":"x","oldText":null,"path":"/w/h","type":"diff"}],"kind":"edit","rawInput":{"file_path":"/w/h","content":"x"},"sessionUpdate":"tool_call","title":"Write","toolCallId":"w"}`,
			`{"content":[{"newText":"y","oldText":"x","path":"/w/h","type":"diff"}],"kind":"edit","rawInput":{"file_path":"/w/h","old_string":"x","new_string":"y"},"sessionUpdate":"tool_call","title":"Edit","toolCallId":"e"}`,
		}},
		{"plan, mode, commands, usage", false, []driver.Event{
			{Type: driver.EventPlan, Plan: &driver.Plan{Entries: []driver.PlanEntry{{Content: "x", Priority: "urgent"}}}},
			{Type: driver.EventModeChanged, Mode: &driver.Mode{ID: "plan"}},
			{Type: driver.EventCommands, Commands: []driver.Command{{Name: "echo", Hint: "text"}}},
			{Type: driver.EventUsage, Usage: &driver.Usage{ContextUsed: 1, ContextSize: 10}},
			{Type: driver.EventUsage, Usage: &driver.Usage{InputTokens: 5}}, // a turn's tokens: the prompt's answer
		}, []string{
			`{"entries":[{"content":"x","priority":"medium","status":"pending"}],"sessionUpdate":"plan"}`,
			`{"currentModeId":"plan","sessionUpdate":"current_mode_update"}`,
			`{"availableCommands":[{"description":"","input":{"hint":"text"},"name":"echo"}],"sessionUpdate":"available_commands_update"}`,
			`{"sessionUpdate":"usage_update","size":10,"used":1}`,
		}},
		{"raw updates pass only from an ACP agent", true, []driver.Event{
			{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "future", Data: json.RawMessage(`{"sessionUpdate":"future","x":[1]}`)}},
			{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "junk", Data: json.RawMessage(`{"no":"kind"}`)}},
		}, []string{`{"sessionUpdate":"future","x":[1]}`}},
		{"raw events of other drivers stay home", false, []driver.Event{
			{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "future", Data: json.RawMessage(`{"sessionUpdate":"future"}`)}},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := updater{rawOK: tc.rawOK, tools: map[string]bool{}, messages: map[string]string{}}
			var got []string
			for _, ev := range tc.evs {
				for _, up := range u.updates(ev) {
					b, err := json.Marshal(up)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, string(b))
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d updates, want %d:\n%v", len(got), len(tc.want), got)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("update %d:\n got %s\nwant %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestEditorOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent []driver.PermissionOption
		want  string
	}{
		{"by kind, once each", []driver.PermissionOption{{ID: "proceed_once", Name: "Yes", Kind: "allow_once"}, {ID: "x", Name: "Yes too", Kind: "allow_once"},
			{ID: "cancel", Name: "No", Kind: "reject_once"}}, "allow_once:Yes reject_once:No "},
		{"unknown kinds dropped, an allow and a reject added", []driver.PermissionOption{{ID: "a", Name: "Sure", Kind: "maybe"}},
			"allow_once:Allow reject_once:Reject "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			for _, o := range editorOptions(tc.agent) {
				got += o["kind"] + ":" + o["name"] + " "
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRelayed(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta map[string]any
		want *policy.Relayed
	}{
		{"none", nil, nil},
		{"not tai's", map[string]any{"other": 1}, nil},
		{"no decider", map[string]any{"tai": map[string]any{"reason": "x"}}, nil},
		{"a rule", map[string]any{"tai": map[string]any{"decidedBy": "rule:r", "reason": "--allow"}}, &policy.Relayed{By: "rule:r", Reason: "--allow"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := relayed(tc.meta)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Notices, compaction updates and boolean config options reach only an
// editor that advertised them; another gets a notice as a message line and
// neither of the others.
func TestGatedUpdates(t *testing.T) {
	all := acp.ClientSessionCapabilities{Notices: &acp.EmptyObject{}, Compaction: &acp.EmptyObject{},
		ConfigOptions: acp.ClientConfigOptionsCapabilities{Boolean: &acp.EmptyObject{}}}
	evs := []driver.Event{
		{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "notice", Data: json.RawMessage(`{"sessionUpdate":"notice","severity":"error","title":"Quota"}`)}},
		{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: "compaction_update", Data: json.RawMessage(`{"sessionUpdate":"compaction_update","compactionId":"c","status":"in_progress"}`)}},
		{Type: driver.EventConfigOptions, Config: []driver.ConfigOption{{ID: "fast", Type: "boolean", CurrentValue: json.RawMessage(`true`)}, {ID: "m", Type: "select"}}},
	}
	for _, tc := range []struct {
		name   string
		editor acp.ClientSessionCapabilities
		want   []string
	}{
		{"not advertised", acp.ClientSessionCapabilities{}, []string{
			`{"content":{"text":"\n[error] Quota\n","type":"text"},"sessionUpdate":"agent_message_chunk"}`,
			`{"configOptions":[{"id":"m","name":"m","options":[],"type":"select"}],"sessionUpdate":"config_option_update"}`,
		}},
		{"advertised", all, []string{
			`{"sessionUpdate":"notice","severity":"error","title":"Quota"}`,
			`{"compactionId":"c","sessionUpdate":"compaction_update","status":"in_progress"}`,
			`{"configOptions":[{"currentValue":true,"id":"fast","name":"fast","type":"boolean"},{"id":"m","name":"m","options":[],"type":"select"}],"sessionUpdate":"config_option_update"}`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := updater{rawOK: true, editor: tc.editor, tools: map[string]bool{}, messages: map[string]string{}}
			var got []string
			for _, ev := range evs {
				for _, up := range u.updates(ev) {
					b, _ := json.Marshal(up)
					got = append(got, string(b))
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
