package acp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// semEqual compares two JSON documents structurally, which is the contract
// for known variants (key order and whitespace are not preserved).
func semEqual(t *testing.T, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if !reflect.DeepEqual(w, g) {
		t.Fatalf("JSON differs\nwant: %s\ngot:  %s", want, got)
	}
}

// roundTrip decodes in into a T, re-encodes it and checks semantic equality.
func roundTrip[T any](t *testing.T, in string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatalf("decode %T: %v\n%s", v, err, in)
	}
	out, err := Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	semEqual(t, []byte(in), out)
	return v
}

// kinder is implemented by every union.
type kinder interface{ Kind() string }

func TestSessionUpdateVariants(t *testing.T) {
	tests := []struct {
		kind string
		in   string
	}{
		{UpdateUserMessageChunk, `{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"},"messageId":"m1"}`},
		{UpdateAgentMessageChunk, `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello","annotations":{"audience":["user"],"priority":0.5}}}`},
		{UpdateAgentThoughtChunk, `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}`},
		{UpdateToolCall, `{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Read","kind":"read","status":"pending","locations":[{"path":"/p/README.md","line":3}],"rawInput":{"path":"/p/README.md"},"name":"read_file","content":[{"type":"content","content":{"type":"text","text":"x"}},{"type":"diff","path":"/p/a","newText":"n"},{"type":"terminal","terminalId":"t1"}]}`},
		{UpdateToolCallUpdate, `{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed","content":[],"rawOutput":{"ok":true}}`},
		{UpdatePlan, `{"sessionUpdate":"plan","entries":[{"content":"step","priority":"high","status":"in_progress"}]}`},
		{UpdateAvailableCommandsUpdate, `{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"web","description":"search","input":{"hint":"query"}}]}`},
		{UpdateCurrentModeUpdate, `{"sessionUpdate":"current_mode_update","currentModeId":"plan"}`},
		{UpdateConfigOptionUpdate, `{"sessionUpdate":"config_option_update","configOptions":[{"type":"boolean","id":"fast","name":"Fast","currentValue":true}]}`},
		{UpdateSessionInfoUpdate, `{"sessionUpdate":"session_info_update","title":"T","updatedAt":null}`},
		{UpdateUsageUpdate, `{"sessionUpdate":"usage_update","used":1200,"size":200000,"cost":{"amount":0.25,"currency":"USD"}}`},
		{UpdateNotice, `{"sessionUpdate":"notice","severity":"warning","title":"Rate limited","description":"retrying"}`},
		{UpdateCompactionUpdate, `{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":[{"type":"text","text":"s"}],"error":null}`},
		{UpdateCompactionSummaryChunk, `{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"part"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			u := roundTrip[SessionUpdate](t, tt.in)
			if u.Kind() != tt.kind {
				t.Fatalf("Kind() = %q, want %q", u.Kind(), tt.kind)
			}
			if u.Unknown != nil {
				t.Fatal("known variant decoded as Unknown")
			}
		})
	}
}

func TestUnionKnownVariants(t *testing.T) {
	tests := []struct {
		name string
		in   string
		kind string
		dec  func(t *testing.T, in string) kinder
	}{
		{"content/text", `{"type":"text","text":"a"}`, "text", rt[ContentBlock]},
		{"content/image", `{"type":"image","data":"AAA=","mimeType":"image/png","uri":"file:///a.png"}`, "image", rt[ContentBlock]},
		{"content/audio", `{"type":"audio","data":"AAA=","mimeType":"audio/wav"}`, "audio", rt[ContentBlock]},
		{"content/resource_link", `{"type":"resource_link","uri":"file:///a","name":"a","title":"A","description":"d","mimeType":"text/plain","size":12}`, "resource_link", rt[ContentBlock]},
		{"content/resource-text", `{"type":"resource","resource":{"uri":"file:///a","text":"body","mimeType":"text/plain"}}`, "resource", rt[ContentBlock]},
		{"content/resource-blob", `{"type":"resource","resource":{"uri":"file:///b","blob":"AAA="}}`, "resource", rt[ContentBlock]},
		{"toolcontent/content", `{"type":"content","content":{"type":"text","text":"a"}}`, "content", rt[ToolCallContent]},
		{"toolcontent/diff", `{"type":"diff","path":"/a","oldText":"o","newText":"n"}`, "diff", rt[ToolCallContent]},
		{"toolcontent/terminal", `{"type":"terminal","terminalId":"t"}`, "terminal", rt[ToolCallContent]},
		{"outcome/selected", `{"outcome":"selected","optionId":"allow"}`, "selected", rt[RequestPermissionOutcome]},
		{"outcome/cancelled", `{"outcome":"cancelled"}`, "cancelled", rt[RequestPermissionOutcome]},
		{"mcp/stdio", `{"name":"fs","command":"/bin/mcp","args":["-v"],"env":[{"name":"K","value":"V"}]}`, "stdio", rt[McpServer]},
		{"mcp/stdio-typed", `{"type":"stdio","name":"fs","command":"/bin/mcp","args":[],"env":[]}`, "stdio", rt[McpServer]},
		{"mcp/http", `{"type":"http","name":"h","url":"https://x/mcp","headers":[{"name":"Authorization","value":"Bearer t"}]}`, "http", rt[McpServer]},
		{"mcp/sse", `{"type":"sse","name":"s","url":"https://x/sse","headers":[]}`, "sse", rt[McpServer]},
		{"auth/untyped", `{"id":"oauth","name":"Log in","description":"browser"}`, "agent", rt[AuthMethod]},
		{"auth/agent", `{"type":"agent","id":"key","name":"API key"}`, "agent", rt[AuthMethod]},
		{"auth/terminal", `{"type":"terminal","id":"login","name":"Login","args":["--login"],"env":{"NO_BROWSER":"1"}}`, "terminal", rt[AuthMethod]},
		{"config/select-flat", `{"type":"select","id":"model","name":"Model","category":"model","currentValue":"a","options":[{"value":"a","name":"A"},{"value":"b","name":"B","description":"bee"}]}`, "select", rt[SessionConfigOption]},
		{"config/select-grouped", `{"type":"select","id":"model","name":"Model","currentValue":"a","options":[{"group":"g1","name":"Group 1","options":[{"value":"a","name":"A"}]}]}`, "select", rt[SessionConfigOption]},
		{"config/boolean", `{"type":"boolean","id":"x","name":"X","currentValue":false}`, "boolean", rt[SessionConfigOption]},
		{"elicit/form", `{"mode":"form","sessionId":"s","toolCallId":"tc","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`, "form", rt[CreateElicitationRequest]},
		{"elicit/url", `{"mode":"url","requestId":7,"message":"Log in","elicitationId":"e1","url":"https://x/auth"}`, "url", rt[CreateElicitationRequest]},
		{"elicitresp/accept", `{"action":"accept","content":{"name":"Ann","n":3,"ok":true,"tags":["a","b"]}}`, "accept", rt[CreateElicitationResponse]},
		{"elicitresp/decline", `{"action":"decline"}`, "decline", rt[CreateElicitationResponse]},
		{"elicitresp/cancel", `{"action":"cancel"}`, "cancel", rt[CreateElicitationResponse]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.dec(t, tt.in).Kind(); got != tt.kind {
				t.Fatalf("Kind() = %q, want %q", got, tt.kind)
			}
		})
	}
}

func rt[T kinder](t *testing.T, in string) kinder { return roundTrip[T](t, in) }

// Unknown variants must survive byte for byte: a relaying orchestrator may
// not know what it forwards.
func TestUnknownVariantsByteIdentical(t *testing.T) {
	tests := []struct {
		name string
		in   string
		kind string
		dec  func([]byte) (kinder, []byte, error)
	}{
		{"update/plan_update", `{ "sessionUpdate" : "plan_update", "plan": {"type":"markdown","text":"<b>x</b> & y"} }`, "plan_update", raw[*SessionUpdate]},
		{"update/no-tag", `{"content":{"type":"text","text":"x"}}`, "", raw[*SessionUpdate]},
		{"update/numeric-tag", `{"sessionUpdate":5}`, "", raw[*SessionUpdate]},
		{"content", `{"type":"video","url":"x", "n":1.50}`, "video", raw[*ContentBlock]},
		{"toolcontent", `{"type":"file_change","kind":"add","path":"/a"}`, "file_change", raw[*ToolCallContent]},
		{"outcome", `{"outcome":"deferred","until":"later"}`, "deferred", raw[*RequestPermissionOutcome]},
		{"mcp", `{"type":"acp","name":"x","serverId":"s1"}`, "acp", raw[*McpServer]},
		{"auth", `{"type":"oauth2","id":"o","name":"O","scopes":["a"]}`, "oauth2", raw[*AuthMethod]},
		{"config", `{"type":"slider","id":"t","name":"Temp","min":0,"max":1}`, "slider", raw[*SessionConfigOption]},
		{"elicit", `{"mode":"qr","message":"scan","payload":"<x>"}`, "qr", raw[*CreateElicitationRequest]},
		{"elicitresp", `{"action":"defer","_meta":{"a":1}}`, "defer", raw[*CreateElicitationResponse]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, out, err := tt.dec([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if k.Kind() != tt.kind {
				t.Fatalf("Kind() = %q, want %q", k.Kind(), tt.kind)
			}
			if string(out) != tt.in {
				t.Fatalf("not byte-identical\nwant: %s\ngot:  %s", tt.in, out)
			}
		})
	}
}

func raw[P interface {
	*T
	kinder
	json.Unmarshaler
	json.Marshaler
}, T any](data []byte) (kinder, []byte, error) {
	p := P(new(T))
	if err := p.UnmarshalJSON(data); err != nil {
		return nil, nil, err
	}
	out, err := p.MarshalJSON()
	return p, out, err
}

// Through a whole notification, with the wire encoder, a compact unknown
// update (even one containing HTML characters) is relayed unchanged.
func TestUnknownUpdateInsideNotification(t *testing.T) {
	update := `{"sessionUpdate":"subagent_update","sessionId":"child","title":"<worker> & co","state":{"type":"running"}}`
	in := `{"sessionId":"s1","update":` + update + `}`
	var n SessionNotification
	if err := json.Unmarshal([]byte(in), &n); err != nil {
		t.Fatal(err)
	}
	if n.Update.Unknown == nil || n.Update.Kind() != "subagent_update" {
		t.Fatalf("got %+v", n.Update)
	}
	out, err := Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Fatalf("not byte-identical\nwant: %s\ngot:  %s", in, out)
	}
	// json.Marshal HTML-escapes Marshaler output, which is why Marshal exists.
	std, _ := json.Marshal(n)
	if bytes.Equal(std, out) {
		t.Log("encoding/json no longer escapes HTML in Marshaler output; Marshal may be unnecessary")
	}
}

func TestMetaPreserved(t *testing.T) {
	meta := `"_meta":{"traceparent":"00-abc-01","zed.dev":{"n":1,"list":[true,null]}}`
	inputs := []struct {
		name string
		in   string
		dec  func(t *testing.T, in string)
	}{
		{"notification", `{"sessionId":"s",` + meta + `,"update":{"sessionUpdate":"agent_message_chunk",` + meta + `,"content":{"type":"text","text":"x",` + meta + `}}}`, rtAny[SessionNotification]},
		{"tool_call", `{"sessionUpdate":"tool_call","toolCallId":"1","title":"t",` + meta + `,"content":[{"type":"diff","path":"/a","newText":"n",` + meta + `}],"locations":[{"path":"/a",` + meta + `}]}`, rtAny[SessionUpdate]},
		{"initialize", `{"protocolVersion":1,` + meta + `,"clientCapabilities":{` + meta + `,"fs":{"readTextFile":true,` + meta + `},"terminal":true}}`, rtAny[InitializeRequest]},
		{"permission", `{"outcome":{"outcome":"selected","optionId":"a",` + meta + `},` + meta + `}`, rtAny[RequestPermissionResponse]},
		{"mcp stdio", `{"name":"n","command":"/c","args":[],"env":[{"name":"a","value":"b",` + meta + `}],` + meta + `}`, rtAny[McpServer]},
		{"config", `{"type":"select","id":"m","name":"M","currentValue":"a",` + meta + `,"options":[{"value":"a","name":"A",` + meta + `}]}`, rtAny[SessionConfigOption]},
		{"session_info", `{"sessionUpdate":"session_info_update",` + meta + `}`, rtAny[SessionUpdate]},
		{"empty response", `{` + meta + `}`, rtAny[AuthenticateResponse]},
	}
	for _, tt := range inputs {
		t.Run(tt.name, func(t *testing.T) { tt.dec(t, tt.in) })
	}
}

func rtAny[T any](t *testing.T, in string) { roundTrip[T](t, in) }

func TestMethodRoundTrips(t *testing.T) {
	tests := []struct {
		name string
		in   string
		dec  func(t *testing.T, in string)
	}{
		{"initialize req", `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"auth":{"terminal":true},"elicitation":{"form":{},"url":{}},"session":{"configOptions":{"boolean":{}},"notices":{},"compaction":{}}},"clientInfo":{"name":"tai","title":"Tai","version":"0.1.0"}}`, rtAny[InitializeRequest]},
		{"initialize resp", `{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"audio":true,"embeddedContext":true},"mcpCapabilities":{"http":true,"sse":true},"auth":{"logout":{}},"sessionCapabilities":{"list":{},"delete":{},"additionalDirectories":{},"resume":{},"close":{}}},"authMethods":[{"id":"a","name":"A"},{"type":"terminal","id":"t","name":"T","args":["login"]}],"agentInfo":{"name":"x","version":"1"}}`, rtAny[InitializeResponse]},
		{"authenticate", `{"methodId":"a"}`, rtAny[AuthenticateRequest]},
		{"logout", `{}`, rtAny[LogoutRequest]},
		{"new req", `{"cwd":"/w","mcpServers":[{"name":"a","command":"/a","args":[],"env":[]},{"type":"http","name":"h","url":"u","headers":[]}],"additionalDirectories":["/x"]}`, rtAny[NewSessionRequest]},
		{"new resp", `{"sessionId":"s","modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code","description":"d"}]},"configOptions":[{"type":"select","id":"mode","name":"Mode","category":"mode","currentValue":"ask","options":[{"value":"ask","name":"Ask"}]}],"models":{"currentModelId":"m","availableModels":[{"modelId":"m","name":"M"}]}}`, rtAny[NewSessionResponse]},
		{"load req", `{"sessionId":"s","cwd":"/w","mcpServers":[]}`, rtAny[LoadSessionRequest]},
		{"load resp", `{"modes":{"currentModeId":"a","availableModes":[]}}`, rtAny[LoadSessionResponse]},
		{"resume req", `{"sessionId":"s","cwd":"/w"}`, rtAny[ResumeSessionRequest]},
		{"resume resp", `{"configOptions":[]}`, rtAny[ResumeSessionResponse]},
		{"close", `{"sessionId":"s"}`, rtAny[CloseSessionRequest]},
		{"list req", `{"cwd":"/w","cursor":"c"}`, rtAny[ListSessionsRequest]},
		{"list resp", `{"sessions":[{"sessionId":"s","cwd":"/w","title":"t","updatedAt":"2026-01-01T00:00:00Z","additionalDirectories":["/x"]}],"nextCursor":"n"}`, rtAny[ListSessionsResponse]},
		{"delete", `{"sessionId":"s"}`, rtAny[DeleteSessionRequest]},
		{"prompt req", `{"sessionId":"s","prompt":[{"type":"text","text":"/web go"},{"type":"resource_link","uri":"file:///a","name":"a"}]}`, rtAny[PromptRequest]},
		{"prompt resp", `{"stopReason":"end_turn","usage":{"totalTokens":3,"inputTokens":1,"outputTokens":2}}`, rtAny[PromptResponse]},
		{"cancel", `{"sessionId":"s"}`, rtAny[CancelNotification]},
		{"cancel_request", `{"requestId":"r-1"}`, rtAny[CancelRequestNotification]},
		{"set_mode", `{"sessionId":"s","modeId":"code"}`, rtAny[SetSessionModeRequest]},
		{"set_config select", `{"sessionId":"s","configId":"model","value":"b"}`, rtAny[SetSessionConfigOptionRequest]},
		{"set_config bool", `{"sessionId":"s","configId":"fast","type":"boolean","value":true}`, rtAny[SetSessionConfigOptionRequest]},
		{"set_config resp", `{"configOptions":[{"type":"boolean","id":"fast","name":"Fast","currentValue":true}]}`, rtAny[SetSessionConfigOptionResponse]},
		{"permission req", `{"sessionId":"s","toolCall":{"toolCallId":"call_2","title":"Edit","kind":"edit","status":"pending"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Skip","kind":"reject_once"}]}`, rtAny[RequestPermissionRequest]},
		{"permission resp", `{"outcome":{"outcome":"cancelled"}}`, rtAny[RequestPermissionResponse]},
		{"read req", `{"sessionId":"s","path":"/a","line":10,"limit":5}`, rtAny[ReadTextFileRequest]},
		{"read resp", `{"content":"x"}`, rtAny[ReadTextFileResponse]},
		{"write req", `{"sessionId":"s","path":"/a","content":""}`, rtAny[WriteTextFileRequest]},
		{"terminal create", `{"sessionId":"s","command":"go","args":["test"],"env":[{"name":"A","value":"1"}],"cwd":"/w","outputByteLimit":1048576}`, rtAny[CreateTerminalRequest]},
		{"terminal create resp", `{"terminalId":"t"}`, rtAny[CreateTerminalResponse]},
		{"terminal output", `{"sessionId":"s","terminalId":"t"}`, rtAny[TerminalOutputRequest]},
		{"terminal output resp", `{"output":"ok","truncated":false,"exitStatus":{"exitCode":0}}`, rtAny[TerminalOutputResponse]},
		{"terminal output signal", `{"output":"","truncated":true,"exitStatus":{"signal":"SIGKILL"}}`, rtAny[TerminalOutputResponse]},
		{"terminal wait", `{"sessionId":"s","terminalId":"t"}`, rtAny[WaitForTerminalExitRequest]},
		{"terminal wait resp", `{"exitCode":1}`, rtAny[WaitForTerminalExitResponse]},
		{"terminal kill", `{"sessionId":"s","terminalId":"t"}`, rtAny[KillTerminalRequest]},
		{"terminal release", `{"sessionId":"s","terminalId":"t"}`, rtAny[ReleaseTerminalRequest]},
		{"elicitation complete", `{"elicitationId":"e"}`, rtAny[CompleteElicitationNotification]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.dec(t, tt.in) })
	}
}

func TestZeroUnionIsNull(t *testing.T) {
	var n SessionNotification
	if err := json.Unmarshal([]byte(`{"sessionId":"s","update":null}`), &n); err != nil {
		t.Fatal(err)
	}
	if n.Update.Kind() != "" {
		t.Fatalf("Kind() = %q", n.Update.Kind())
	}
	out, err := Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"sessionId":"s","update":null}` {
		t.Fatalf("got %s", out)
	}
}

func TestTwoVariantsIsAnError(t *testing.T) {
	u := NewAgentMessageChunk("a")
	u.Plan = &Plan{}
	if _, err := json.Marshal(u); err == nil || !strings.Contains(err.Error(), "more than one") {
		t.Fatalf("err = %v", err)
	}
}

func TestBadKnownVariantFails(t *testing.T) {
	for _, in := range []string{
		`{"sessionUpdate":"tool_call","toolCallId":5}`,
		`{"sessionUpdate":"agent_message_chunk","content":"text"}`,
		`[1,2]`,
	} {
		var u SessionUpdate
		if err := json.Unmarshal([]byte(in), &u); err == nil {
			t.Errorf("%s: want error, got %+v", in, u)
		} else if u.Kind() != "" {
			t.Errorf("%s: union half-set after error: %q", in, u.Kind())
		}
	}
}
