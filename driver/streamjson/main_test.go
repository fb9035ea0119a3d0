package streamjson

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// The test binary doubles as a scripted stream-json CLI: with
// TAI_FAKE_CLI set it plays that scenario on stdin/stdout instead of
// running tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TAI_FAKE_CLI"); mode != "" {
		os.Exit(fakeCLI(mode))
	}
	goleak.VerifyTestMain(m)
}

// fakeCLI speaks the Claude dialect like claude -p --input-format
// stream-json does. The prompt text picks what a turn does:
//
//	tool     a Write tool call behind can_use_tool; the tool_result
//	         echoes the answer (updatedInput or the deny message)
//	withdraw a can_use_tool, then control_cancel_request for it
//	slow     nothing until an interrupt arrives
//	apierr   result subtype success with is_error true
//	hooked   a Bash call the CLI allows by itself: the PreToolUse hook tai
//	         registered (if any) decides, then the Stop hook runs
//	write    a Write the CLI allows by itself, creating written.txt in its
//	         cwd, and one outside it
//	other    a text answer
//
// Exit status 3 means tai broke the protocol (answered a withdrawn
// request, or sent a line that is not JSON).
func fakeCLI(mode string) int {
	if mode == "diestart" {
		fmt.Fprintln(os.Stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	send := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	const sid = `"session_id":"fake-session"`
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	withdrawn := ""
	hooks := map[string]string{} // hook event → the callback id tai registered
	turn := 0
	mode2 := "default"
	waitFor := func(pred func(map[string]any) bool) map[string]any {
		for in.Scan() {
			var m map[string]any
			if json.Unmarshal(in.Bytes(), &m) != nil {
				os.Exit(3)
			}
			if pred(m) {
				return m
			}
		}
		return nil
	}
	result := func(extra string) {
		turn++
		send(`{"type":"result","subtype":"success","is_error":false,"result":"ok","stop_reason":"end_turn","terminal_reason":"completed","total_cost_usd":%d.5,"modelUsage":{"m":{"inputTokens":%d,"outputTokens":%d,"costUSD":%d.5}},"permission_denials":[]%s,%s}`,
			turn, 10*turn, 2*turn, turn, extra, sid)
	}
	for in.Scan() {
		var msg struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype string `json:"subtype"`
				Mode    string `json:"mode"`
				Model   string `json:"model"`
				Hooks   map[string][]struct {
					Matcher *string  `json:"matcher"`
					IDs     []string `json:"hookCallbackIds"`
				} `json:"hooks"`
			} `json:"request"`
			Response struct {
				RequestID string `json:"request_id"`
			} `json:"response"`
			Message struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil {
			return 3
		}
		switch msg.Type {
		case "control_response":
			if msg.Response.RequestID == withdrawn {
				return 3
			}
		case "control_request":
			switch msg.Request.Subtype {
			case "initialize":
				for ev, ms := range msg.Request.Hooks {
					if len(ms) != 1 || ms[0].Matcher != nil || len(ms[0].IDs) != 1 {
						return 3
					}
					hooks[ev] = ms[0].IDs[0]
				}
				send(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"current_permission_mode":%q,"claude_code_version":"9.9.9"}}}`, msg.RequestID, mode2)
			case "set_permission_mode":
				if msg.Request.Mode == "bogus" {
					send(`{"type":"control_response","response":{"subtype":"error","request_id":%q,"error":"Invalid permission mode"}}`, msg.RequestID)
					continue
				}
				mode2 = msg.Request.Mode
				send(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"mode":%q}}}`, msg.RequestID, mode2)
				send(`{"type":"system","subtype":"status","status":null,"permissionMode":%q,%s}`, mode2, sid)
			case "set_model":
				send(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"model":%q}}}`, msg.RequestID, msg.Request.Model)
			default:
				send(`{"type":"control_response","response":{"subtype":"error","request_id":%q,"error":"unknown"}}`, msg.RequestID)
			}
		case "user":
			text := ""
			for _, c := range msg.Message.Content {
				text += c.Text
			}
			send(`{"type":"system","subtype":"init","permissionMode":%q,"model":"fake-model",%s}`, mode2, sid)
			send(`{"type":"system","subtype":"from_the_future","x":1,%s}`, sid)
			switch {
			case strings.Contains(text, "tool"):
				send(`{"type":"assistant","message":{"id":"m1","model":"fake","content":[{"type":"tool_use","id":"tu1","name":"Write","input":{"file_path":"/w/a.txt","content":"x"}}]},%s}`, sid)
				send(`{"type":"control_request","request_id":"perm-1","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"file_path":"/w/a.txt","content":"x"},"tool_use_id":"tu1"}}`)
				r := waitFor(func(m map[string]any) bool { return m["type"] == "control_response" })
				resp, _ := json.Marshal(r["response"])
				isErr := strings.Contains(string(resp), `"deny"`)
				send(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":%q,"is_error":%v}]},%s}`, string(resp), isErr, sid)
				result("")
			case strings.Contains(text, "withdraw"):
				send(`{"type":"control_request","request_id":"perm-2","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm -rf build"},"tool_use_id":"tu2"}}`)
				withdrawn = "perm-2"
				send(`{"type":"control_cancel_request","request_id":"perm-2"}`)
				result("")
			case strings.Contains(text, "slow"):
				send(`{"type":"assistant","message":{"id":"m2","model":"fake","content":[{"type":"text","text":"thinking slowly"}]},%s}`, sid)
				r := waitFor(func(m map[string]any) bool {
					req, _ := m["request"].(map[string]any)
					return m["type"] == "control_request" && req["subtype"] == "interrupt"
				})
				send(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"still_queued":[]}}}`, r["request_id"])
				send(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},%s}`, sid)
				send(`{"type":"result","subtype":"error_during_execution","is_error":true,"stop_reason":null,"terminal_reason":"aborted_streaming",%s}`, sid)
			case strings.Contains(text, "apierr"):
				send(`{"type":"assistant","message":{"id":"m3","model":"<synthetic>","content":[{"type":"text","text":"API Error: 500 boom"}]},"error":"server_error",%s}`, sid)
				send(`{"type":"result","subtype":"success","is_error":true,"api_error_status":500,"terminal_reason":"api_error","result":"API Error: 500 boom",%s}`, sid)
			case strings.Contains(text, "hooked"):
				input := `{"command":"rm notes.txt","description":"tidy up"}`
				send(`{"type":"assistant","message":{"id":"m4","model":"fake","content":[{"type":"tool_use","id":"tu4","name":"Bash","input":%s}]},%s}`, input, sid)
				// Claude 2.1.332's shapes; the hook's answer decides.
				reason := ""
				if cb, ok := hooks["PreToolUse"]; ok {
					send(`{"type":"control_request","request_id":"hook-1","request":{"subtype":"hook_callback","callback_id":%q,"input":{%s,"transcript_path":"/fake/transcript.jsonl","cwd":"/w","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":%s,"tool_use_id":"tu4"},"tool_use_id":"tu4"}}`, cb, sid, input)
					var r struct {
						Response struct {
							Subtype   string `json:"subtype"`
							RequestID string `json:"request_id"`
							Response  struct {
								Out struct {
									Event    string `json:"hookEventName"`
									Decision string `json:"permissionDecision"`
									Reason   string `json:"permissionDecisionReason"`
								} `json:"hookSpecificOutput"`
							} `json:"response"`
						} `json:"response"`
					}
					b, _ := json.Marshal(waitFor(func(m map[string]any) bool { return m["type"] == "control_response" }))
					if json.Unmarshal(b, &r) != nil || r.Response.Subtype != "success" || r.Response.RequestID != "hook-1" {
						return 3
					}
					if r.Response.Response.Out.Decision == "deny" && r.Response.Response.Out.Event == "PreToolUse" {
						reason = r.Response.Response.Out.Reason
					}
				}
				denials := ""
				if reason != "" {
					send(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":%q,"is_error":true,"tool_use_id":"tu4"}]},%s}`, "PreToolUse:Bash hook error: "+reason, sid)
					denials = `,"permission_denials":[{"tool_name":"Bash","tool_use_id":"tu4","tool_input":` + input + `}]`
				} else {
					send(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"","is_error":false,"tool_use_id":"tu4"}]},%s}`, sid)
				}
				if cb, ok := hooks["Stop"]; ok {
					send(`{"type":"control_request","request_id":"hook-2","request":{"subtype":"hook_callback","callback_id":%q,"input":{%s,"transcript_path":"/fake/transcript.jsonl","cwd":"/w","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"done"},"tool_use_id":"x"}}`, cb, sid)
					r := waitFor(func(m map[string]any) bool { return m["type"] == "control_response" })
					if resp, _ := r["response"].(map[string]any); resp["subtype"] != "success" {
						return 3
					}
				}
				result(denials)
			case strings.Contains(text, "write"):
				cwd, _ := os.Getwd()
				if os.WriteFile("written.txt", []byte("hello\n"), 0o644) != nil {
					return 3
				}
				for i, p := range []string{cwd + "/written.txt", "/elsewhere/out.txt"} {
					send(`{"type":"assistant","message":{"id":"m5","model":"fake","content":[{"type":"tool_use","id":"tw%d","name":"Write","input":{"file_path":%q,"content":"hello\n"}}]},%s}`, i, p, sid)
					send(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"File created","tool_use_id":"tw%d"}]},"tool_use_result":{"type":"create","filePath":%q},%s}`, i, p, sid)
				}
				result("")
			case strings.Contains(text, "autodeny"):
				send(`{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"tu9","message":"dontAsk",%s}`, sid)
				result(`,"permission_denials":[{"tool_name":"Bash","tool_use_id":"tu9","tool_input":{}}]`)
			default:
				send(`{"type":"assistant","message":{"id":"m%d","model":"fake","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"echo: %s"}]},%s}`, turn, text, sid)
				result("")
			}
		}
	}
	return 0
}
