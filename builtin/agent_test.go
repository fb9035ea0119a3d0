package builtin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tai-dev/tai/jsonrpc"
	"github.com/tai-dev/tai/protocol/acp"
)

func TestDefaultScriptEndToEnd(t *testing.T) {
	var mu sync.Mutex
	var slept time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		slept += d
		mu.Unlock()
		return ctx.Err()
	}
	c := startAgent(t, clientOpts{sleep: sleep})
	init := c.initialize(fullCaps)
	if init.ProtocolVersion != 1 || init.AgentInfo == nil || init.AgentInfo.Name != AgentName {
		t.Fatalf("initialize = %+v", init)
	}
	caps := init.AgentCapabilities
	if !caps.LoadSession || !caps.PromptCapabilities.EmbeddedContext || caps.SessionCapabilities.List == nil ||
		caps.SessionCapabilities.Resume == nil || caps.SessionCapabilities.Close == nil {
		t.Errorf("agent capabilities = %+v", caps)
	}
	sess := c.newSession()
	if !strings.HasPrefix(sess.SessionId, "builtin-") || sess.Modes == nil || sess.Modes.CurrentModeId != "default" ||
		len(sess.Modes.AvailableModes) != 4 {
		t.Fatalf("session/new = %+v", sess)
	}
	if m, ok := sess.ConfigOptions.ByCategory(acp.CategoryModel); !ok || m.Select == nil || len(m.Select.Options.All()) != 2 {
		t.Errorf("model config option missing: %+v", sess.ConfigOptions)
	}

	if got := c.prompt(sess.SessionId, "show me"); got != acp.StopEndTurn {
		t.Fatalf("stopReason = %q", got)
	}

	k := kinds(c.updates())
	for _, want := range []string{
		acp.UpdateAgentThoughtChunk, acp.UpdatePlan, acp.UpdateAgentMessageChunk, acp.UpdateToolCall,
		acp.UpdateToolCallUpdate, acp.UpdateAvailableCommandsUpdate, acp.UpdateCurrentModeUpdate,
		acp.UpdateConfigOptionUpdate, acp.UpdateUsageUpdate, acp.UpdateSessionInfoUpdate,
	} {
		if k[want] == 0 {
			t.Errorf("no %s update; got %v", want, k)
		}
	}
	for name, want := range map[string]string{"notes.txt": "Written by tai's built-in agent", "hello.txt": "Hello from tai!"} {
		b, err := os.ReadFile(filepath.Join(c.root, name))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s = %q, %v", name, b, err)
		}
	}
	text := c.messageText()
	if !strings.Contains(text, "terminal-ok") || !strings.Contains(text, "notes.txt") {
		t.Errorf("terminal output not echoed in text: %q", text)
	}

	// Tool calls: diff and terminal content, read result, final statuses.
	var sawDiff, sawTerminal, sawReadBack bool
	final := map[string]acp.ToolCallStatus{}
	toolKinds := map[acp.ToolKind]bool{}
	for _, u := range c.updates() {
		var content []acp.ToolCallContent
		if tc := u.ToolCall; tc != nil {
			content = tc.Content
			toolKinds[tc.Kind] = true
			final[tc.ToolCallId] = tc.Status
		}
		if tu := u.ToolCallUpdate; tu != nil {
			content = tu.Content
			if tu.Status != nil {
				final[tu.ToolCallId] = *tu.Status
			}
		}
		for _, item := range content {
			switch {
			case item.Diff != nil:
				sawDiff = item.Diff.OldText == nil && filepath.IsAbs(item.Diff.Path)
			case item.Terminal != nil:
				sawTerminal = true
			case item.Content != nil && item.Content.Content.Text != nil:
				sawReadBack = sawReadBack || strings.Contains(item.Content.Content.Text.Text, "Written by tai's built-in agent")
			}
		}
	}
	if !sawDiff || !sawTerminal || !sawReadBack {
		t.Errorf("tool content: diff=%v terminal=%v readBack=%v", sawDiff, sawTerminal, sawReadBack)
	}
	for _, kind := range []acp.ToolKind{acp.ToolKindRead, acp.ToolKindEdit, acp.ToolKindExecute, acp.ToolKindSwitchMode} {
		if !toolKinds[kind] {
			t.Errorf("no %s tool call", kind)
		}
	}
	for id, st := range final {
		if st != acp.ToolCallCompleted {
			t.Errorf("tool call %s ended %q", id, st)
		}
	}

	c.mu.Lock()
	perms := append([]acp.RequestPermissionRequest(nil), c.permissions...)
	methods := strings.Join(c.methods, " ")
	c.mu.Unlock()
	if len(perms) != 3 {
		t.Errorf("got %d permission requests, want 3 (two writes, one mode switch)", len(perms))
	} else {
		var ids []string
		for _, o := range perms[0].Options {
			ids = append(ids, o.OptionId)
		}
		if got := strings.Join(ids, ","); got != "allow-once,allow-always,reject-once,reject-always" {
			t.Errorf("write permission options = %s", got)
		}
		if k := perms[2].ToolCall.Kind; k == nil || *k != acp.ToolKindSwitchMode || perms[2].Options[0].OptionId != "accept-edits" {
			t.Errorf("switch_mode permission = %+v", perms[2])
		}
	}
	for _, m := range []string{"terminal/create", "terminal/wait_for_exit", "terminal/output", "terminal/release", "fs/write_text_file", "fs/read_text_file"} {
		if !strings.Contains(methods, m) {
			t.Errorf("agent never called %s (calls: %s)", m, methods)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if slept == 0 || slept > time.Second {
		t.Errorf("default script slept %v; want a little, under 1 s", slept)
	}
	if err := c.stop(); err != nil {
		t.Errorf("Serve = %v, want nil after EOF", err)
	}
}

func TestRejectSkipsWrite(t *testing.T) {
	reject := func(req acp.RequestPermissionRequest) (string, bool) {
		if k := req.ToolCall.Kind; k != nil && *k == acp.ToolKindEdit {
			return OptionRejectOnce, false
		}
		return req.Options[0].OptionId, false
	}
	c := startAgent(t, clientOpts{choose: reject})
	c.initialize(fullCaps)
	sess := c.newSession()
	if got := c.prompt(sess.SessionId, "go"); got != acp.StopEndTurn {
		t.Fatalf("stopReason = %q", got)
	}
	if _, err := os.Stat(filepath.Join(c.root, "hello.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hello.txt exists after a rejected write: %v", err)
	}
	if text := c.messageText(); !strings.Contains(text, "Skipped writing hello.txt: permission denied.") {
		t.Errorf("no skip message in %q", text)
	}
	failed := 0
	for _, u := range c.updates() {
		if tu := u.ToolCallUpdate; tu != nil && tu.Status != nil && *tu.Status == acp.ToolCallFailed {
			failed++
		}
	}
	if failed < 2 {
		t.Errorf("want the rejected write tool calls failed, got %d failed updates", failed)
	}
}

func TestCancelDuringDelay(t *testing.T) {
	sleeping := make(chan struct{}, 1)
	sleep := func(ctx context.Context, d time.Duration) error {
		sleeping <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	c := startAgent(t, clientOpts{sleep: sleep, script: mustScript(t, `
- text: before
- delay: 30
- text: never
`)})
	c.initialize(fullCaps)
	sess := c.newSession()
	go func() {
		<-sleeping
		_ = c.conn.Notify(context.Background(), acp.MethodSessionCancel, acp.CancelNotification{SessionId: sess.SessionId})
	}()
	if got := c.prompt(sess.SessionId, "go"); got != acp.StopCancelled {
		t.Fatalf("stopReason = %q, want cancelled", got)
	}
	if text := c.messageText(); text != "before" {
		t.Errorf("message text = %q", text)
	}
	// The session takes a new prompt after a cancel.
	go func() {
		<-sleeping
		c.conn.Notify(context.Background(), acp.MethodSessionCancel, acp.CancelNotification{SessionId: sess.SessionId})
	}()
	if got := c.prompt(sess.SessionId, "again"); got != acp.StopCancelled {
		t.Fatalf("second stopReason = %q", got)
	}
}

func TestCancelDuringPermission(t *testing.T) {
	asked := make(chan struct{}, 1)
	block := func(acp.RequestPermissionRequest) (string, bool) {
		asked <- struct{}{}
		return "", true
	}
	c := startAgent(t, clientOpts{choose: block, script: mustScript(t, `
- write: {path: x.txt, content: x}
- text: never
`)})
	c.initialize(fullCaps)
	sess := c.newSession()
	go func() {
		<-asked
		_ = c.conn.Notify(context.Background(), acp.MethodSessionCancel, acp.CancelNotification{SessionId: sess.SessionId})
	}()
	if got := c.prompt(sess.SessionId, "go"); got != acp.StopCancelled {
		t.Fatalf("stopReason = %q, want cancelled", got)
	}
	waitFor(t, "$/cancel_request for the pending permission", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.cancelled == 1
	})
	if _, err := os.Stat(filepath.Join(c.root, "x.txt")); err == nil {
		t.Error("file written after cancel")
	}
	if strings.Contains(c.messageText(), "never") {
		t.Error("turn went on after cancel")
	}
}

func TestPermissionCancelledOutcomeEndsTurn(t *testing.T) {
	cancelOutcome := func(acp.RequestPermissionRequest) (string, bool) { return "", false }
	c := startAgent(t, clientOpts{choose: cancelOutcome, script: mustScript(t, `
- permission: {title: Deploy, kind: execute}
- text: never
`)})
	c.initialize(fullCaps)
	sess := c.newSession()
	if got := c.prompt(sess.SessionId, "go"); got != acp.StopCancelled {
		t.Fatalf("stopReason = %q, want cancelled", got)
	}
}

func TestSlashCommands(t *testing.T) {
	c := startAgent(t, clientOpts{})
	c.initialize(fullCaps)
	sess := c.newSession()
	if got := c.prompt(sess.SessionId, "/echo hello there"); got != acp.StopEndTurn {
		t.Fatalf("stopReason = %q", got)
	}
	if text := c.messageText(); text != "hello there" {
		t.Errorf("/echo said %q", text)
	}
	c.prompt(sess.SessionId, "/help")
	if text := c.messageText(); !strings.Contains(text, "/echo <text to echo>") || !strings.Contains(text, "/plan") {
		t.Errorf("/help said %q", text)
	}
	c.prompt(sess.SessionId, "/frobnicate")
	if text := c.messageText(); !strings.Contains(text, "Unknown command /frobnicate") {
		t.Errorf("unknown command said %q", text)
	}
	c.prompt(sess.SessionId, "/plan")
	if k := kinds(c.updates()); k[acp.UpdateCurrentModeUpdate] != 1 {
		t.Errorf("/plan: updates %v", k)
	}
	// No fs or terminal traffic for slash commands.
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.methods) != 0 {
		t.Errorf("slash commands made client calls: %v", c.methods)
	}
}

func TestLoadReplaysHistoryResumeDoesNot(t *testing.T) {
	c := startAgent(t, clientOpts{})
	c.initialize(fullCaps)
	sess := c.newSession()
	c.prompt(sess.SessionId, "/echo remember me")
	before := len(c.snapshot())

	var load acp.LoadSessionResponse
	if err := c.call(acp.MethodSessionLoad, acp.LoadSessionRequest{SessionId: sess.SessionId, Cwd: c.root}, &load); err != nil {
		t.Fatal(err)
	}
	if load.Modes == nil || load.Modes.CurrentModeId != "default" || len(load.ConfigOptions) != 2 {
		t.Errorf("load response = %+v", load)
	}
	replayed := c.snapshot()[before:]
	var user, agent string
	for _, l := range replayed[:len(replayed)-1] {
		n, ok := l.update()
		if !ok {
			t.Fatalf("unexpected line during replay: %s", l.raw)
		}
		if n.Update.UserMessageChunk != nil {
			user += n.Update.UserMessageChunk.Content.Text.Text
		}
		if n.Update.AgentMessageChunk != nil {
			agent += n.Update.AgentMessageChunk.Content.Text.Text
		}
	}
	if !replayed[len(replayed)-1].isResponse() {
		t.Errorf("last line of load is not its response: %s", replayed[len(replayed)-1].raw)
	}
	if user != "/echo remember me" || agent != "remember me" {
		t.Errorf("replayed user %q agent %q", user, agent)
	}

	before = len(c.snapshot())
	var resume acp.ResumeSessionResponse
	if err := c.call(acp.MethodSessionResume, acp.ResumeSessionRequest{SessionId: sess.SessionId, Cwd: c.root}, &resume); err != nil {
		t.Fatal(err)
	}
	if after := c.snapshot()[before:]; len(after) != 1 || !after[0].isResponse() {
		t.Errorf("resume sent %d lines, want only the response", len(after))
	}

	err := c.call(acp.MethodSessionLoad, acp.LoadSessionRequest{SessionId: "builtin-nope", Cwd: c.root}, nil)
	if rpcCode(err) != jsonrpc.CodeResourceNotFound {
		t.Errorf("load of an unknown session = %v", err)
	}
}

func TestListAndClose(t *testing.T) {
	c := startAgent(t, clientOpts{})
	c.initialize(fullCaps)
	s1 := c.newSession()
	s2 := c.newSession()
	c.prompt(s1.SessionId, "/echo titled")
	var list acp.ListSessionsResponse
	if err := c.call(acp.MethodSessionList, acp.ListSessionsRequest{}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 2 || list.Sessions[0].SessionId != s1.SessionId || list.Sessions[0].Cwd != c.root ||
		list.Sessions[0].Title == nil || *list.Sessions[0].Title != "/echo titled" || list.Sessions[0].UpdatedAt == nil {
		t.Fatalf("session/list = %+v", list)
	}
	if err := c.call(acp.MethodSessionList, acp.ListSessionsRequest{Cwd: "/elsewhere"}, &list); err != nil || len(list.Sessions) != 0 {
		t.Errorf("list by other cwd = %+v, %v", list, err)
	}
	if err := c.call(acp.MethodSessionClose, acp.CloseSessionRequest{SessionId: s2.SessionId}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.call(acp.MethodSessionList, nil, &list); err != nil || len(list.Sessions) != 1 {
		t.Errorf("after close: %+v, %v", list, err)
	}
	err := c.call(acp.MethodSessionPrompt, acp.PromptRequest{SessionId: s2.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("x")}}, nil)
	if rpcCode(err) != jsonrpc.CodeResourceNotFound {
		t.Errorf("prompt on a closed session = %v", err)
	}
}

func TestSetModeAndConfigOptions(t *testing.T) {
	c := startAgent(t, clientOpts{})
	c.initialize(fullCaps)
	sess := c.newSession()
	if err := c.call(acp.MethodSessionSetMode, acp.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: "plan"}, nil); err != nil {
		t.Fatal(err)
	}
	var modeUpdates []string
	for _, u := range c.updates() {
		if u.CurrentModeUpdate != nil {
			modeUpdates = append(modeUpdates, u.CurrentModeUpdate.CurrentModeId)
		}
	}
	if strings.Join(modeUpdates, ",") != "plan" {
		t.Errorf("current_mode_update after set_mode = %v", modeUpdates)
	}

	var resp acp.SetSessionConfigOptionResponse
	if err := c.call(acp.MethodSessionSetConfigOption, acp.SetConfigSelect(sess.SessionId, "model", "builtin-large"), &resp); err != nil {
		t.Fatal(err)
	}
	model, _ := resp.ConfigOptions.Find("model")
	mode, _ := resp.ConfigOptions.Find("mode")
	if model.Select == nil || model.Select.CurrentValue != "builtin-large" || mode.Select == nil || mode.Select.CurrentValue != "plan" {
		t.Errorf("config options = %+v", resp.ConfigOptions)
	}
	if err := c.call(acp.MethodSessionSetConfigOption, acp.SetConfigSelect(sess.SessionId, "mode", "accept-edits"), &resp); err != nil {
		t.Fatal(err)
	}
	last := c.updates()[len(c.updates())-1]
	if last.CurrentModeUpdate == nil || last.CurrentModeUpdate.CurrentModeId != "accept-edits" {
		t.Errorf("set_config_option mode did not emit current_mode_update: %+v", last)
	}
	err := c.call(acp.MethodSessionSetMode, acp.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: "yolo"}, nil)
	if rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Errorf("unknown mode = %v", err)
	}

	// accept-edits writes without asking.
	c.prompt(sess.SessionId, "go")
	c.mu.Lock()
	n := len(c.permissions)
	c.mu.Unlock()
	if n != 1 { // only the switch_mode step asks
		t.Errorf("permission requests in accept-edits mode = %d, want 1", n)
	}
}

func TestNoCapabilityClientGetsMessages(t *testing.T) {
	c := startAgent(t, clientOpts{})
	c.initialize(acp.ClientCapabilities{})
	sess := c.newSession()
	if got := c.prompt(sess.SessionId, "go"); got != acp.StopEndTurn {
		t.Fatalf("stopReason = %q", got)
	}
	text := c.messageText()
	for _, want := range []string{
		"I can't write notes.txt: the client did not advertise fs.writeTextFile.",
		"I can't read notes.txt: the client did not advertise fs.readTextFile.",
		"the client did not advertise the terminal capability",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in %q", want, text)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.methods {
		if strings.HasPrefix(m, "fs/") || strings.HasPrefix(m, "terminal/") {
			t.Errorf("agent called %s on a client without the capability", m)
		}
	}
}

func TestEarlyUpdatesBeforeSessionNewResponse(t *testing.T) {
	for _, early := range []bool{false, true} {
		t.Run(map[bool]string{false: "normal", true: "early"}[early], func(t *testing.T) {
			sc := mustScript(t, "- text: hi\n")
			sc.EarlyUpdates = early
			c := startAgent(t, clientOpts{script: sc})
			c.initialize(fullCaps)
			start := len(c.snapshot())
			c.newSession()
			waitFor(t, "available_commands_update after the response", func() bool {
				ls := c.snapshot()
				n, ok := ls[len(ls)-1].update()
				return ok && n.Update.AvailableCommandsUpdate != nil
			})
			var order []string
			for _, l := range c.snapshot()[start:] {
				if l.isResponse() {
					order = append(order, "response")
				} else if n, ok := l.update(); ok && n.Update.AvailableCommandsUpdate != nil {
					order = append(order, "commands")
					var names []string
					for _, cmd := range n.Update.AvailableCommandsUpdate.AvailableCommands {
						names = append(names, cmd.Name)
					}
					if got := strings.Join(names, ","); got != "echo,plan,help" {
						t.Errorf("commands = %s", got)
					}
				}
			}
			want := "response,commands"
			if early {
				want = "commands,response,commands"
			}
			if got := strings.Join(order, ","); got != want {
				t.Errorf("order = %s, want %s", got, want)
			}
		})
	}
}

func TestLateUpdatesAfterPromptResponse(t *testing.T) {
	c := startAgent(t, clientOpts{script: mustScript(t, "- text: on time\n- late_updates: 3\n")})
	c.initialize(fullCaps)
	sess := c.newSession()
	start := len(c.snapshot())
	if got := c.prompt(sess.SessionId, "go"); got != acp.StopEndTurn {
		t.Fatalf("stopReason = %q", got)
	}
	waitFor(t, "late updates", func() bool { return strings.Count(c.messageText(), "late update") == 3 })
	var order []string
	for _, l := range c.snapshot()[start:] {
		if l.isResponse() {
			order = append(order, "response")
		} else if n, ok := l.update(); ok && n.Update.AgentMessageChunk != nil {
			order = append(order, n.Update.AgentMessageChunk.Content.Text.Text)
		}
	}
	want := "on time|response|late update 1/3 |late update 2/3 |late update 3/3 "
	if got := strings.Join(order, "|"); got != want {
		t.Errorf("order = %s\nwant %s", got, want)
	}
}

func TestInitializeAndAuth(t *testing.T) {
	c := startAgent(t, clientOpts{script: mustScript(t, `
auth_methods: [{id: token, name: Token, description: Paste a token}]
steps: [{text: hi}]
`)})
	var resp acp.InitializeResponse
	if err := c.call(acp.MethodInitialize, acp.InitializeRequest{ProtocolVersion: 7}, &resp); err != nil || resp.ProtocolVersion != 1 {
		t.Fatalf("initialize v7 = %+v, %v", resp, err)
	}
	if len(resp.AuthMethods) != 1 || resp.AuthMethods[0].Agent == nil || resp.AuthMethods[0].Agent.Id != "token" {
		t.Errorf("authMethods = %+v", resp.AuthMethods)
	}
	if err := c.call(acp.MethodInitialize, acp.InitializeRequest{ProtocolVersion: 0}, nil); rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Errorf("initialize v0 = %v", err)
	}
	err := c.call(acp.MethodSessionNew, acp.NewSessionRequest{Cwd: c.root}, nil)
	if rpcCode(err) != jsonrpc.CodeAuthRequired {
		t.Fatalf("session/new before authenticate = %v, want -32000", err)
	}
	if err := c.call(acp.MethodAuthenticate, acp.AuthenticateRequest{MethodId: "nope"}, nil); rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Errorf("authenticate with an unknown method = %v", err)
	}
	if err := c.call(acp.MethodAuthenticate, acp.AuthenticateRequest{MethodId: "token"}, nil); err != nil {
		t.Fatal(err)
	}
	c.newSession()
}

func TestRequestValidation(t *testing.T) {
	c := startAgent(t, clientOpts{})
	c.initialize(fullCaps)
	cases := []struct {
		method string
		params any
		code   int
	}{
		{acp.MethodSessionNew, map[string]any{"cwd": "relative/dir", "mcpServers": []any{}}, jsonrpc.CodeInvalidParams},
		{acp.MethodSessionNew, map[string]any{"cwd": c.root}, jsonrpc.CodeInvalidParams},
		{acp.MethodSessionNew, nil, jsonrpc.CodeInvalidParams},
		{acp.MethodSessionDelete, map[string]any{"sessionId": "x"}, jsonrpc.CodeResourceNotFound},
		{acp.MethodSessionFork, map[string]any{"sessionId": "x", "cwd": c.root, "mcpServers": []any{}}, jsonrpc.CodeResourceNotFound},
		{acp.MethodSessionFork, map[string]any{"sessionId": "x", "cwd": "rel", "mcpServers": []any{}}, jsonrpc.CodeInvalidParams},
		{acp.MethodSessionList, map[string]any{"cursor": "!!"}, jsonrpc.CodeInvalidParams},
		{"_vendor/thing", map[string]any{}, jsonrpc.CodeMethodNotFound},
		{acp.MethodSessionPrompt, map[string]any{"sessionId": "nope", "prompt": []any{}}, jsonrpc.CodeResourceNotFound},
	}
	for _, tc := range cases {
		if err := c.call(tc.method, tc.params, nil); rpcCode(err) != tc.code {
			t.Errorf("%s %v = %v, want code %d", tc.method, tc.params, err, tc.code)
		}
	}
	// Unknown notifications are ignored; the connection stays usable.
	_ = c.conn.Notify(context.Background(), "_vendor/ping", map[string]any{})
	c.newSession()
}

func TestCrashStep(t *testing.T) {
	c := startAgent(t, clientOpts{script: mustScript(t, "- text: going down\n- crash: {code: 3, stderr: boom}\n- text: never\n")})
	c.initialize(fullCaps)
	sess := c.newSession()
	err := c.call(acp.MethodSessionPrompt, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}, nil)
	if !errors.Is(err, jsonrpc.ErrClosed) {
		t.Fatalf("prompt on a crashing agent = %v, want a closed connection", err)
	}
	var ce *CrashError
	if serr := c.stop(); !errors.As(serr, &ce) || ce.Code != 3 {
		t.Fatalf("Serve = %v, want *CrashError{3}", serr)
	}
	if !strings.Contains(c.stderr.String(), "boom\n") {
		t.Errorf("stderr = %q", c.stderr.String())
	}
	if strings.Contains(c.messageText(), "never") {
		t.Error("steps ran after the crash")
	}
}

func TestHangIgnoresCancel(t *testing.T) {
	c := startAgent(t, clientOpts{script: mustScript(t, "- hang: true\n")})
	c.initialize(fullCaps)
	sess := c.newSession()
	done := make(chan error, 1)
	go func() {
		done <- c.conn.Call(context.Background(), acp.MethodSessionPrompt,
			acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}, nil)
	}()
	time.Sleep(20 * time.Millisecond)
	_ = c.conn.Notify(context.Background(), acp.MethodSessionCancel, acp.CancelNotification{SessionId: sess.SessionId})
	select {
	case err := <-done:
		t.Fatalf("hung prompt answered after session/cancel: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := c.stop(); err != nil {
		t.Errorf("Serve = %v", err)
	}
	if err := <-done; err == nil {
		t.Error("hung prompt succeeded")
	}
}

func TestGarbageBigFloodOutside(t *testing.T) {
	const big = 1<<20 + 7
	c := startAgent(t, clientOpts{script: mustScript(t, `
- garbage: "this is not json"
- big: {bytes: 1048583}
- flood: {count: 1000}
- outside: {path: /etc/hostname}
- stop: max_tokens
- text: after
`)})
	c.initialize(fullCaps)
	sess := c.newSession()
	if got := c.prompt(sess.SessionId, "go"); got != acp.StopMaxTokens {
		t.Fatalf("stopReason = %q", got)
	}
	if st := c.conn.Stats(); st.Garbage != 1 {
		t.Errorf("client skipped %d garbage lines, want 1", st.Garbage)
	}
	var bigLen, flood int
	for _, u := range c.updates() {
		if m := u.AgentMessageChunk; m != nil && m.Content.Text != nil {
			if len(m.Content.Text.Text) > 1<<19 {
				bigLen = len(m.Content.Text.Text)
			}
			if strings.HasPrefix(m.Content.Text.Text, "flood ") {
				flood++
			}
		}
	}
	if bigLen != big {
		t.Errorf("big chunk is %d bytes, want %d", bigLen, big)
	}
	if flood != 250 {
		t.Errorf("flood message chunks = %d, want 250 of 1000 updates", flood)
	}
	text := c.messageText()
	if !strings.Contains(text, "The client refused to read /etc/hostname: path outside the workspace") || !strings.HasSuffix(text, "after") {
		t.Errorf("text tail = %q", text[max(0, len(text)-300):])
	}

	// Load replays the big chunk by streaming it again, but not the flood.
	before := len(c.snapshot())
	if err := c.call(acp.MethodSessionLoad, acp.LoadSessionRequest{SessionId: sess.SessionId, Cwd: c.root}, nil); err != nil {
		t.Fatal(err)
	}
	replayed := c.snapshot()[before:]
	if len(replayed) > 20 {
		t.Errorf("load replayed %d lines; the flood must not be recorded", len(replayed))
	}
	found := false
	for _, l := range replayed {
		if n, ok := l.update(); ok && n.Update.AgentMessageChunk != nil && len(n.Update.AgentMessageChunk.Content.Text.Text) == big {
			found = true
		}
	}
	if !found {
		t.Error("big chunk not replayed")
	}
}

func TestServeStopsOnContext(t *testing.T) {
	agentIn, toAgent := pipePair()
	defer toAgent.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, agentIn, discard{}, Options{Stderr: discard{}}) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve ignored ctx")
	}
}

func TestSplitChunks(t *testing.T) {
	for _, tc := range []struct {
		s string
		n int
	}{{"hello world, this is a test", 3}, {"ab", 5}, {"", 3}, {"héllo wörld", 4}, {"x", 1}} {
		parts := splitChunks(tc.s, tc.n)
		if strings.Join(parts, "") != tc.s {
			t.Errorf("splitChunks(%q, %d) = %q does not rejoin", tc.s, tc.n, parts)
		}
		if tc.n > 1 && len([]rune(tc.s)) >= tc.n && len(parts) != tc.n {
			t.Errorf("splitChunks(%q, %d) gave %d parts", tc.s, tc.n, len(parts))
		}
	}
}

func TestResponseIDParsing(t *testing.T) {
	for line, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n":                    "7",
		`{"jsonrpc":"2.0","id":"a","result":null}` + "\n":                `"a"`,
		`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file"}` + "\n":   "",
		`{"jsonrpc":"2.0","method":"session/update","params":{}}` + "\n": "",
	} {
		got, _ := responseID([]byte(line))
		if got != want {
			t.Errorf("responseID(%s) = %q, want %q", line, got, want)
		}
	}
}

// A client that stops reading must not wedge Serve: cancelling ctx still
// ends it, even with a big chunk half written.
func TestServeStopsWhenClientStopsReading(t *testing.T) {
	agentIn, toAgent := io.Pipe()
	fromAgent, agentOut := io.Pipe()
	defer fromAgent.Close()
	defer toAgent.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, agentIn, agentOut, Options{Stderr: discard{}, Script: mustScript(t, "- big: {bytes: 10485760}\n")})
	}()
	br := bufio.NewReader(fromAgent)
	send := func(s string) {
		if _, err := io.WriteString(toAgent, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	var sessionID string
	for sessionID == "" {
		line, err := br.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var resp struct {
			Result struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
		}
		_ = json.Unmarshal(line, &resp)
		sessionID = resp.Result.SessionID
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + sessionID + `","prompt":[{"type":"text","text":"go"}]}}`)
	time.Sleep(50 * time.Millisecond) // let the big write start and block
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve wedged on a client that stopped reading")
	}
}

func TestSwitchModeRejectAndUnaskedWrite(t *testing.T) {
	reject := func(req acp.RequestPermissionRequest) (string, bool) {
		return req.Options[len(req.Options)-1].OptionId, false // the reject option comes last
	}
	c := startAgent(t, clientOpts{choose: reject, script: mustScript(t, `
- write: {path: quiet.txt, content: q, ask: false}
- switch_mode: accept-edits
`)})
	c.initialize(fullCaps)
	sess := c.newSession()
	if err := c.call(acp.MethodSessionSetMode, acp.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: "plan"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := c.prompt(sess.SessionId, "go"); got != acp.StopEndTurn {
		t.Fatalf("stopReason = %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(c.root, "quiet.txt")); err != nil || string(b) != "q" {
		t.Errorf("quiet.txt = %q, %v", b, err)
	}
	c.mu.Lock()
	perms := append([]acp.RequestPermissionRequest(nil), c.permissions...)
	c.mu.Unlock()
	if len(perms) != 1 || *perms[0].ToolCall.Title != "Exit plan mode: switch to Accept edits" {
		t.Fatalf("permissions = %+v", perms)
	}
	var ids []string
	for _, o := range perms[0].Options {
		ids = append(ids, o.OptionId)
	}
	if got := strings.Join(ids, ","); got != "accept-edits,default,reject" {
		t.Errorf("switch_mode options = %s", got)
	}
	if text := c.messageText(); !strings.Contains(text, "Staying in Plan mode.") {
		t.Errorf("text = %q", text)
	}
	modes := 0
	for _, u := range c.updates() {
		if u.CurrentModeUpdate != nil {
			modes++
		}
	}
	if modes != 1 { // only the set_mode request's
		t.Errorf("current_mode_update count = %d, want 1", modes)
	}
}

// A run step with ask: true asks first (kind execute, its command in
// rawInput) and skips the command when rejected; without ask it runs
// unasked.
func TestRunAsk(t *testing.T) {
	reject := func(req acp.RequestPermissionRequest) (string, bool) {
		return OptionRejectOnce, false
	}
	c := startAgent(t, clientOpts{choose: reject, script: mustScript(t, `
- run: {command: sh, args: ["-c", "echo asked > asked.txt"], ask: true}
- run: {command: sh, args: ["-c", "echo unasked > unasked.txt"]}
`)})
	c.initialize(fullCaps)
	sess := c.newSession()
	if got := c.prompt(sess.SessionId, "go"); got != acp.StopEndTurn {
		t.Fatalf("stopReason = %q", got)
	}
	c.mu.Lock()
	perms := append([]acp.RequestPermissionRequest(nil), c.permissions...)
	c.mu.Unlock()
	if len(perms) != 1 || perms[0].ToolCall.Kind == nil || *perms[0].ToolCall.Kind != acp.ToolKindExecute ||
		!strings.Contains(string(perms[0].ToolCall.RawInput), "echo asked") {
		t.Fatalf("permissions = %+v", perms)
	}
	if _, err := os.Stat(filepath.Join(c.root, "asked.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a rejected command ran: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(c.root, "unasked.txt")); err != nil || string(b) != "unasked\n" {
		t.Errorf("unasked.txt = %q, %v", b, err)
	}
	if text := c.messageText(); !strings.Contains(text, "Skipped running `sh -c 'echo asked > asked.txt'`: permission denied.") {
		t.Errorf("text = %q", text)
	}
}

// A limit step fails the prompt as claude-agent-acp does at a usage
// limit, for its first times prompts only; the turn's text before it is
// sent, and nothing after it runs.
func TestLimitStep(t *testing.T) {
	c := startAgent(t, clientOpts{script: mustScript(t, "- text: working\n- limit: {resets_at: \"2026-12-07T15:00:00Z\", times: 1}\n- text: done\n")})
	c.initialize(fullCaps)
	sess := c.newSession()
	prompt := func() error {
		return c.call(acp.MethodSessionPrompt, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}, nil)
	}
	var re *jsonrpc.Error
	if err := prompt(); !errors.As(err, &re) || re.Code != jsonrpc.CodeInternalError ||
		re.Message != "Internal error: You've hit your limit · resets 2026-12-07T15:00:00Z" || string(re.Data) != `{"errorKind":"rate_limit"}` {
		t.Fatalf("prompt at the limit = %v (%+v)", err, re)
	}
	if strings.Contains(c.messageText(), "done") {
		t.Fatal("steps ran after the limit")
	}
	if err := prompt(); err != nil {
		t.Fatalf("prompt after the limit cleared: %v", err)
	}
	if !strings.Contains(c.messageText(), "done") {
		t.Fatalf("the second turn did not finish: %q", c.messageText())
	}
}
