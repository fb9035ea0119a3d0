package acp

import (
	"encoding/json"
	"strings"
	"testing"
)

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLoadSessionNullResult(t *testing.T) {
	for _, in := range []string{"null", "", " null ", "{}"} {
		var r LoadSessionResponse
		if err := DecodeResult(json.RawMessage(in), &r); err != nil {
			t.Fatalf("DecodeResult(%q): %v", in, err)
		}
		if r.Modes != nil || r.ConfigOptions != nil || r.Meta != nil {
			t.Fatalf("DecodeResult(%q) = %+v, want zero", in, r)
		}
	}
	// Plain json.Unmarshal tolerates null too, e.g. when a transport decodes
	// the result field directly.
	var r LoadSessionResponse
	if err := json.Unmarshal([]byte("null"), &r); err != nil {
		t.Fatal(err)
	}
	var env struct {
		Result LoadSessionResponse `json:"result"`
	}
	if err := json.Unmarshal([]byte(`{"jsonrpc":"2.0","id":3,"result":null}`), &env); err != nil {
		t.Fatal(err)
	}
}

func TestCurrentModeUpdate(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"sessionUpdate":"current_mode_update","currentModeId":"plan"}`, "plan"},
		{`{"sessionUpdate":"current_mode_update","modeId":"legacy"}`, "legacy"},
		{`{"sessionUpdate":"current_mode_update","currentModeId":"a","modeId":"b"}`, "a"},
	}
	for _, tt := range tests {
		var u SessionUpdate
		if err := json.Unmarshal([]byte(tt.in), &u); err != nil {
			t.Fatal(err)
		}
		if u.CurrentModeUpdate == nil || u.CurrentModeUpdate.CurrentModeId != tt.want {
			t.Fatalf("%s: got %+v", tt.in, u.CurrentModeUpdate)
		}
		if out := mustMarshal(t, u); strings.Contains(out, `"modeId"`) {
			t.Fatalf("wrote legacy key: %s", out)
		}
	}
}

func TestMcpServerStdioHasNoType(t *testing.T) {
	var s McpServer
	if err := json.Unmarshal([]byte(`{"name":"fs","command":"/usr/bin/mcp-fs","args":["--root","/w"],"env":[{"name":"TOKEN","value":"x"}]}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Stdio == nil || s.Stdio.Command != "/usr/bin/mcp-fs" || len(s.Stdio.Env) != 1 || s.Stdio.Typed {
		t.Fatalf("got %+v", s)
	}
	built := McpServer{Stdio: &McpServerStdio{Name: "fs", Command: "/bin/x"}}
	if got, want := mustMarshal(t, built), `{"name":"fs","command":"/bin/x","args":[],"env":[]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	h := McpServer{Http: &McpServerHttp{Name: "h", Url: "https://x"}}
	if got, want := mustMarshal(t, h), `{"type":"http","name":"h","url":"https://x","headers":[]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestMcpServersNeverNull(t *testing.T) {
	if got, want := mustMarshal(t, NewSessionRequest{Cwd: "/w"}), `{"cwd":"/w","mcpServers":[]}`; got != want {
		t.Fatalf("new: got %s, want %s", got, want)
	}
	if got, want := mustMarshal(t, LoadSessionRequest{SessionId: "s", Cwd: "/w"}), `{"sessionId":"s","cwd":"/w","mcpServers":[]}`; got != want {
		t.Fatalf("load: got %s, want %s", got, want)
	}
	// Optional on resume, so nil is omitted there.
	if got, want := mustMarshal(t, ResumeSessionRequest{SessionId: "s", Cwd: "/w"}), `{"sessionId":"s","cwd":"/w"}`; got != want {
		t.Fatalf("resume: got %s, want %s", got, want)
	}
	if got, want := mustMarshal(t, PromptRequest{SessionId: "s"}), `{"sessionId":"s","prompt":[]}`; got != want {
		t.Fatalf("prompt: got %s, want %s", got, want)
	}
}

func TestToolCallUpdateAbsentVsEmpty(t *testing.T) {
	tests := []struct {
		in          string
		contentNil  bool
		contentLen  int
		locationNil bool
	}{
		{`{"toolCallId":"1","status":"completed"}`, true, 0, true},
		{`{"toolCallId":"1","content":[],"locations":[]}`, false, 0, false},
		{`{"toolCallId":"1","content":null}`, true, 0, true},
		{`{"toolCallId":"1","content":[{"type":"content","content":{"type":"text","text":"x"}}]}`, false, 1, true},
	}
	for _, tt := range tests {
		var u ToolCallUpdate
		if err := json.Unmarshal([]byte(tt.in), &u); err != nil {
			t.Fatal(err)
		}
		if (u.Content == nil) != tt.contentNil || len(u.Content) != tt.contentLen || (u.Locations == nil) != tt.locationNil {
			t.Fatalf("%s: content=%#v locations=%#v", tt.in, u.Content, u.Locations)
		}
		// Re-encoding keeps the distinction.
		out := mustMarshal(t, u)
		if strings.Contains(out, `"content"`) == tt.contentNil {
			t.Fatalf("%s: re-encoded as %s", tt.in, out)
		}
	}
	if got, want := mustMarshal(t, ToolCallUpdate{ToolCallId: "1", Content: []ToolCallContent{}}), `{"toolCallId":"1","content":[]}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if got, want := mustMarshal(t, ToolCallUpdate{ToolCallId: "1"}), `{"toolCallId":"1"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestSessionInfoUpdateTriState(t *testing.T) {
	tests := []struct {
		in              string
		titleSet, null  bool
		title           string
		updatedAtAbsent bool
	}{
		{`{"sessionUpdate":"session_info_update"}`, false, false, "", true},
		{`{"sessionUpdate":"session_info_update","title":null}`, true, true, "", true},
		{`{"sessionUpdate":"session_info_update","title":"Fix bug","updatedAt":"2026-08-01T00:00:00Z"}`, true, false, "Fix bug", false},
	}
	for _, tt := range tests {
		u := roundTrip[SessionUpdate](t, tt.in)
		info := u.SessionInfoUpdate
		if info == nil {
			t.Fatalf("%s: not a session_info_update", tt.in)
		}
		if info.Title.Set != tt.titleSet || info.Title.Null != tt.null {
			t.Fatalf("%s: title = %+v", tt.in, info.Title)
		}
		if v, ok := info.Title.Get(); ok != (tt.titleSet && !tt.null) || v != tt.title {
			t.Fatalf("%s: Get() = %q, %v", tt.in, v, ok)
		}
		if info.UpdatedAt.IsZero() != tt.updatedAtAbsent {
			t.Fatalf("%s: updatedAt = %+v", tt.in, info.UpdatedAt)
		}
	}
	built := SessionUpdate{SessionInfoUpdate: &SessionInfoUpdate{Title: Some("New"), UpdatedAt: Null[string]()}}
	if got, want := mustMarshal(t, built), `{"sessionUpdate":"session_info_update","title":"New","updatedAt":null}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	empty := SessionUpdate{SessionInfoUpdate: &SessionInfoUpdate{}}
	if got, want := mustMarshal(t, empty), `{"sessionUpdate":"session_info_update"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestCompactionPatchFields(t *testing.T) {
	u := roundTrip[SessionUpdate](t, `{"sessionUpdate":"compaction_update","compactionId":"c","status":"failed","summary":null,"error":"boom"}`)
	c := u.CompactionUpdate
	if !c.Summary.Null || !c.Summary.Set {
		t.Fatalf("summary = %+v", c.Summary)
	}
	if e, ok := c.Error.Get(); !ok || e != "boom" {
		t.Fatalf("error = %+v", c.Error)
	}
	u = roundTrip[SessionUpdate](t, `{"sessionUpdate":"compaction_update","compactionId":"c","status":"_vendor_paused"}`)
	if u.CompactionUpdate.Status != "_vendor_paused" || u.CompactionUpdate.Summary.Set {
		t.Fatalf("got %+v", u.CompactionUpdate)
	}
}

func TestSkipInvalidItems(t *testing.T) {
	t.Run("availableCommands", func(t *testing.T) {
		in := `{"sessionUpdate":"available_commands_update","availableCommands":[
			{"name":"web","description":"search"},
			{"name":5,"description":"bad name type"},
			null,
			"not an object",
			{"description":"no name"},
			{"name":"plan","description":"plan","input":{"hint":"goal"}}]}`
		var u SessionUpdate
		if err := json.Unmarshal([]byte(in), &u); err != nil {
			t.Fatal(err)
		}
		cmds := u.AvailableCommandsUpdate.AvailableCommands
		if len(cmds) != 2 || cmds[0].Name != "web" || cmds[1].Input.Hint != "goal" {
			t.Fatalf("got %+v", cmds)
		}
	})
	t.Run("configOptions", func(t *testing.T) {
		in := `{"sessionUpdate":"config_option_update","configOptions":[
			{"type":"select","id":"model","name":"Model","currentValue":"a","options":[
				{"value":"a","name":"A"},{"value":1,"name":"bad"},null,{"value":"b","name":"B"}]},
			{"type":"select","id":7,"name":"bad id"},
			{"type":"boolean","name":"no id","currentValue":true},
			{"type":"boolean","id":"b","name":"B","currentValue":"yes"},
			42,
			{"type":"_vendor_slider","id":"t","name":"Temp"},
			{"type":"boolean","id":"fast","name":"Fast","currentValue":true}]}`
		var u SessionUpdate
		if err := json.Unmarshal([]byte(in), &u); err != nil {
			t.Fatal(err)
		}
		opts := u.ConfigOptionUpdate.ConfigOptions
		var kinds []string
		for _, o := range opts {
			kinds = append(kinds, o.Kind()+":"+o.ID())
		}
		if got, want := strings.Join(kinds, ","), "select:model,_vendor_slider:t,boolean:fast"; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		if got := opts[0].Select.Options.Flat; len(got) != 2 || got[1].Value != "b" {
			t.Fatalf("select options = %+v", got)
		}
		if o, ok := opts.ByCategory(CategoryModel); ok {
			t.Fatalf("no option had a category, got %+v", o)
		}
		if o, ok := opts.Find("fast"); !ok || !o.Boolean.CurrentValue {
			t.Fatalf("Find(fast) = %+v, %v", o, ok)
		}
	})
	t.Run("grouped options", func(t *testing.T) {
		in := `{"type":"select","id":"model","name":"Model","category":"model","currentValue":"b","options":[
			{"group":"g1","name":"One","options":[{"value":"a","name":"A"},{"value":false}]},
			{"name":"no group","options":[]},
			{"group":"g2","name":"Two","options":[{"value":"b","name":"B"}]}]}`
		var o SessionConfigOption
		if err := json.Unmarshal([]byte(in), &o); err != nil {
			t.Fatal(err)
		}
		g := o.Select.Options.Grouped
		if len(g) != 2 || len(g[0].Options) != 1 {
			t.Fatalf("groups = %+v", g)
		}
		var vals []string
		for _, s := range o.Select.Options.All() {
			vals = append(vals, s.Value)
		}
		if strings.Join(vals, ",") != "a,b" {
			t.Fatalf("All() = %v", vals)
		}
		if o.Category() != CategoryModel {
			t.Fatalf("Category() = %q", o.Category())
		}
	})
	t.Run("plan entries", func(t *testing.T) {
		in := `{"sessionUpdate":"plan","entries":[{"content":"a","priority":"low","status":"pending"},{"content":["x"]},{"content":"b","priority":"_urgent","status":"blocked"}]}`
		var u SessionUpdate
		if err := json.Unmarshal([]byte(in), &u); err != nil {
			t.Fatal(err)
		}
		e := u.Plan.Entries
		if len(e) != 2 || e[1].Priority != "_urgent" || e[1].Status != "blocked" {
			t.Fatalf("entries = %+v", e)
		}
	})
	t.Run("response lists", func(t *testing.T) {
		var r NewSessionResponse
		if err := json.Unmarshal([]byte(`{"sessionId":"s","configOptions":[{"type":"select"},{"type":"boolean","id":"x","name":"X","currentValue":false}]}`), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.ConfigOptions) != 1 || r.ConfigOptions[0].ID() != "x" {
			t.Fatalf("got %+v", r.ConfigOptions)
		}
	})
}

// Shapes observed from codex-acp / claude-agent-acp: extra fields and
// vendor _meta that must be ignored or preserved without failing.
func TestCodexStyleExtras(t *testing.T) {
	newResp := `{"sessionId":"019a-abc","modes":{"currentModeId":"auto","availableModes":[{"id":"read-only","name":"Read Only","description":"Codex can read files"},{"id":"auto","name":"Default"},{"id":"full-access","name":"Full Access"}]},
		"models":{"currentModelId":"gpt-5-codex/medium","availableModels":[{"modelId":"gpt-5-codex/low","name":"gpt-5-codex (low)"}]},
		"configOptions":[
			{"type":"select","id":"mode","name":"Approval Preset","category":"mode","currentValue":"auto","options":[{"value":"read-only","name":"Read Only"},{"value":"auto","name":"Default"}],"x-codex-extra":1},
			{"type":"select","id":"model","name":"Model","category":"model","currentValue":"gpt-5-codex","options":[{"value":"gpt-5-codex","name":"gpt-5-codex","description":"Optimized for coding","extraField":true}]},
			{"type":"select","id":"reasoning_effort","name":"Reasoning Effort","category":"thought_level","currentValue":"medium","options":[{"value":"low","name":"Low"},{"value":"medium","name":"Medium"}]}],
		"unknownTopLevel":{"a":1}}`
	var r NewSessionResponse
	if err := json.Unmarshal([]byte(newResp), &r); err != nil {
		t.Fatal(err)
	}
	if r.SessionId != "019a-abc" || r.Modes.CurrentModeId != "auto" || len(r.Modes.AvailableModes) != 3 {
		t.Fatalf("got %+v", r)
	}
	if m, ok := r.ConfigOptions.ByCategory(CategoryModel); !ok || m.Select.CurrentValue != "gpt-5-codex" {
		t.Fatalf("model option: %+v %v", m, ok)
	}
	if e, ok := r.ConfigOptions.ByCategory(CategoryThoughtLevel); !ok || len(e.Select.Options.All()) != 2 {
		t.Fatalf("effort option: %+v %v", e, ok)
	}
	if !strings.Contains(string(r.Models), "gpt-5-codex/medium") {
		t.Fatalf("models = %s", r.Models)
	}

	toolCall := `{"sessionId":"019a-abc","update":{"sessionUpdate":"tool_call","toolCallId":"call_Xy","title":"Run go test ./...","kind":"execute","status":"in_progress",
		"rawInput":{"command":["bash","-lc","go test ./..."],"cwd":"/w","parsed_cmd":[{"type":"unknown","cmd":"go test ./..."}]},
		"content":[{"type":"terminal","terminalId":"term-1"}],"locations":[],
		"parentToolCallId":"p1","_meta":{"terminal_info":{"terminal_id":"term-1","cwd":"/w"},"claudeCode":{"toolName":"Bash"}}}}`
	var n SessionNotification
	if err := json.Unmarshal([]byte(toolCall), &n); err != nil {
		t.Fatal(err)
	}
	tc := n.Update.ToolCall
	if tc == nil || tc.Kind != ToolKindExecute || tc.Content[0].Terminal.TerminalId != "term-1" {
		t.Fatalf("got %+v", n.Update)
	}
	if _, ok := tc.Meta["terminal_info"]; !ok {
		t.Fatalf("meta lost: %+v", tc.Meta)
	}
	out := mustMarshal(t, n)
	if strings.Contains(out, "parentToolCallId") || !strings.Contains(out, `"parsed_cmd"`) || !strings.Contains(out, `"claudeCode"`) {
		t.Fatalf("re-encoded: %s", out)
	}

	// A permission request whose tool call is an elicitation fallback.
	perm := `{"sessionId":"s","toolCall":{"toolCallId":"elicitation-1","title":"Open URL","kind":"fetch","rawInput":{"url":"https://x"}},"options":[{"optionId":"approved","name":"Yes","kind":"allow_once"},{"optionId":"abort","name":"No","kind":"reject_once"},{"optionId":"always","name":"Always","kind":"_vendor_forever"}]}`
	var pr RequestPermissionRequest
	if err := json.Unmarshal([]byte(perm), &pr); err != nil {
		t.Fatal(err)
	}
	if o, ok := pr.FindOption(PermissionRejectOnce); !ok || o.OptionId != "abort" {
		t.Fatalf("FindOption = %+v %v", o, ok)
	}
	if pr.Options[2].Kind != "_vendor_forever" {
		t.Fatalf("open enum lost: %+v", pr.Options[2])
	}

	// The Go example agent's initialize answer: empty objects everywhere.
	var ir InitializeResponse
	if err := json.Unmarshal([]byte(`{"agentCapabilities":{"auth":{},"mcpCapabilities":{},"promptCapabilities":{},"sessionCapabilities":{}},"authMethods":[],"protocolVersion":1}`), &ir); err != nil {
		t.Fatal(err)
	}
	if ir.ProtocolVersion != ProtocolVersion || ir.AgentCapabilities.SessionCapabilities.Resume != nil || ir.AgentCapabilities.Auth.Logout != nil {
		t.Fatalf("got %+v", ir)
	}
}

func TestConstructors(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"agent chunk", NewAgentMessageChunk("hi"), `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`},
		{"thought", NewAgentThoughtChunk("hm"), `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}`},
		{"user chunk", NewUserMessageChunk("q"), `{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"q"}}`},
		{"tool call", NewToolCall("c1", "Read a", ToolKindRead), `{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Read a","kind":"read","status":"pending"}`},
		{"tool update", NewToolCallUpdate("c1", ToolCallCompleted, ToolText("done")), `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"done"}}]}`},
		{"tool update bare", NewToolCallUpdate("c1", ToolCallFailed), `{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}`},
		{"plan", NewPlan(PlanEntry{Content: "a", Priority: PlanPriorityHigh, Status: PlanStatusPending}), `{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"pending"}]}`},
		{"empty plan", NewPlan(), `{"sessionUpdate":"plan","entries":[]}`},
		{"diff", ToolDiff("/a", nil, "new"), `{"type":"diff","path":"/a","newText":"new"}`},
		{"diff old", ToolDiff("/a", Ptr("old"), "new"), `{"type":"diff","path":"/a","oldText":"old","newText":"new"}`},
		{"terminal", ToolTerminal("t"), `{"type":"terminal","terminalId":"t"}`},
		{"image", ImageBlock("AA==", "image/png"), `{"type":"image","data":"AA==","mimeType":"image/png"}`},
		{"link", ResourceLinkBlock("file:///a", "a"), `{"type":"resource_link","uri":"file:///a","name":"a"}`},
		{"resource", TextResourceBlock("file:///a", "x<y"), `{"type":"resource","resource":{"uri":"file:///a","text":"x<y"}}`},
		{"select", SelectPermission("allow"), `{"outcome":{"outcome":"selected","optionId":"allow"}}`},
		{"cancel", CancelPermission(), `{"outcome":{"outcome":"cancelled"}}`},
		{"set select", SetConfigSelect("s", "model", "b"), `{"sessionId":"s","configId":"model","value":"b"}`},
		{"set bool", SetConfigBoolean("s", "fast", true), `{"sessionId":"s","configId":"fast","type":"boolean","value":true}`},
		{"elicit schema default", CreateElicitationRequest{Form: &FormElicitation{ElicitationScope: ElicitationScope{SessionId: "s"}, Message: "m"}}, `{"mode":"form","sessionId":"s","message":"m","requestedSchema":{"type":"object"}}`},
		{"empty response", SetSessionModeResponse{}, `{}`},
		{"modes nil list", SessionModeState{CurrentModeId: "a"}, `{"currentModeId":"a","availableModes":[]}`},
		{"list sessions nil", ListSessionsResponse{}, `{"sessions":[]}`},
		{"commands nil", AvailableCommandsUpdate{}, `{"availableCommands":[]}`},
		{"auth untyped", AuthMethod{Agent: &AgentAuthMethod{Id: "a", Name: "A"}}, `{"id":"a","name":"A"}`},
		{"client caps", InitializeRequest{ProtocolVersion: ProtocolVersion, ClientCapabilities: ClientCapabilities{Fs: FileSystemCapability{ReadTextFile: true}, Terminal: true}, ClientInfo: &Implementation{Name: "tai", Version: "0.1"}},
			`{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true},"terminal":true},"clientInfo":{"name":"tai","version":"0.1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustMarshal(t, tt.v); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDecodeUsage(t *testing.T) {
	var r PromptResponse
	if err := json.Unmarshal([]byte(`{"stopReason":"cancelled","usage":{"totalTokens":10,"inputTokens":4,"outputTokens":6,"cachedReadTokens":2}}`), &r); err != nil {
		t.Fatal(err)
	}
	u, err := r.DecodeUsage()
	if err != nil || u.TotalTokens != 10 || *u.CachedReadTokens != 2 || r.StopReason != StopCancelled {
		t.Fatalf("usage = %+v, %v", u, err)
	}
	// An odd usage must not fail the response that ends the turn.
	if err := json.Unmarshal([]byte(`{"stopReason":"end_turn","usage":"n/a"}`), &r); err != nil {
		t.Fatal(err)
	}
	if _, err := r.DecodeUsage(); err == nil {
		t.Fatal("want DecodeUsage error")
	}
	r = PromptResponse{StopReason: StopEndTurn}
	if u, err := r.DecodeUsage(); u != nil || err != nil {
		t.Fatalf("got %v, %v", u, err)
	}
}

func TestResourceContentsUnion(t *testing.T) {
	var b ContentBlock
	if err := json.Unmarshal([]byte(`{"type":"resource","resource":{"uri":"x","mimeType":"a/b"}}`), &b); err != nil {
		t.Fatal(err)
	}
	if b.Resource.Resource.Unknown == nil || b.Resource.Resource.Kind() != "" {
		t.Fatalf("got %+v", b.Resource.Resource)
	}
	if err := json.Unmarshal([]byte(`{"type":"resource","resource":{"uri":"x","blob":"AA=="}}`), &b); err != nil {
		t.Fatal(err)
	}
	if b.Resource.Resource.Kind() != "blob" {
		t.Fatalf("got %+v", b.Resource.Resource)
	}
}
