package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	schema "github.com/tai-dev/tai/protocol/acp"
)

// Golden wire transcripts: what real agents sent tai in the e2e/realagents
// read → write → shell scenario, one per agent version
// (testdata/wire/<agent>-<version>.jsonl, captured with
// `go test ./e2e/realagents -update-wire`). Each is replayed through the
// ACP decoders and the driver's translation; testdata/wire/*.golden
// summarises the events produced, so an agent upgrade that changes its wire
// shape shows up as a diff. Regenerate the summaries with
//
//	go test ./driver/acp -run Replay -update

var update = flag.Bool("update", false, "rewrite testdata/wire/*.golden from the transcripts")

// What a transcript may do that the checks otherwise refuse, with why. Keys
// are agent names (the transcript's name up to its version).
var (
	// Tool calls asked about or updated without a tool_call first.
	wireUnannounced = map[string]string{
		"gemini": "gemini-cli sends request_permission (with the full tool call) and then tool_call_update for calls it never announced; the driver creates them from what it gets",
	}
	// Update kinds that may come through as raw events, by kind.
	wireRawKinds = map[string]string{}
	// Agent → client requests outside ACP, by method.
	wireExtensions = map[string]string{
		"craft/drainMidTurnQueue": "qwen-code 0.24 asks after every tool whether queued user input is waiting; tai answers method-not-found and qwen carries on",
	}
)

// unorderedKinds are updates agents send whenever they get round to it
// (commands after a background scan, usage after a model call): where they
// fall among the turn's updates changes from one capture to the next, so
// the summary counts them at the end instead of placing them.
var unorderedKinds = map[string]bool{
	schema.UpdateAvailableCommandsUpdate: true,
	schema.UpdateUsageUpdate:             true,
	schema.UpdateSessionInfoUpdate:       true,
}

// ordered drops the events of unordered updates.
func ordered(evs []driver.Event) []driver.Event {
	return slices.DeleteFunc(evs, func(ev driver.Event) bool {
		return ev.Type == driver.EventCommands || ev.Type == driver.EventUsage || ev.Type == driver.EventSessionInfo
	})
}

// wireLine is one line of a transcript.
type wireLine struct {
	Dir  string          `json:"dir"`
	Line json.RawMessage `json:"line"`
}

// rpcMessage is any JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (m rpcMessage) isRequest() bool  { return m.Method != "" && len(m.ID) > 0 }
func (m rpcMessage) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// replaySink records events; replayDecider answers permission requests
// with what tai answered when the transcript was captured.
type replaySink struct {
	mu     sync.Mutex
	events []driver.Event
}

func (r *replaySink) Emit(ev driver.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *replaySink) since(n int) []driver.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events[n:])
}

func (r *replaySink) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

type replayDecider struct {
	next schema.RequestPermissionResponse
}

func (d *replayDecider) Decide(_ context.Context, req driver.PermissionRequest) (driver.PermissionDecision, error) {
	sel := d.next.Outcome.Selected
	if sel == nil {
		return driver.PermissionDecision{Outcome: driver.OutcomeCancelled, Verdict: driver.VerdictCancelled, DecidedBy: "replay"}, nil
	}
	dec := driver.PermissionDecision{Outcome: driver.OutcomeSelected, OptionID: sel.OptionId, DecidedBy: "replay", ToolCallID: req.ToolCall.ID}
	for _, o := range req.Options {
		if o.ID == sel.OptionId {
			dec.OptionKind = o.Kind
		}
	}
	dec.Verdict = driver.VerdictDeny
	if strings.HasPrefix(dec.OptionKind, "allow") {
		dec.Verdict = driver.VerdictAllow
	}
	return dec, nil
}

func TestReplayWire(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "wire", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no transcripts in testdata/wire (capture them with go test ./e2e/realagents -update-wire)")
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			summary := replay(t, readWire(t, f), filepath.Base(f), agentOf(name))
			golden := strings.TrimSuffix(f, ".jsonl") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(summary), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (generate it with go test ./driver/acp -run Replay -update)", err)
			}
			if string(want) != summary {
				t.Errorf("the replay of %s no longer matches %s (if the change is intended: go test ./driver/acp -run Replay -update)\n%s",
					f, golden, lineDiff(string(want), summary))
			}
		})
	}
}

// agentOf is the agent part of "<agent>-<version>".
func agentOf(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] == '-' && i+1 < len(name) && name[i+1] >= '0' && name[i+1] <= '9' {
			return name[:i]
		}
	}
	return name
}

// reporter is where replay's findings go: a *testing.T, or a recorder in
// the test of the checks themselves.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// replay feeds the agent's side of a transcript through the driver and
// returns the summary of what came out. Checks failing are test errors.
func replay(t reporter, lines []wireLine, name, agent string) string {
	t.Helper()

	// Index the conversation: our requests by id (to decode their
	// responses), our answers to the agent's requests by id.
	ours := map[string]string{}
	answers := map[string]rpcMessage{}
	sessionID := ""
	for _, l := range lines {
		if l.Dir != "out" {
			continue
		}
		var m rpcMessage
		if err := json.Unmarshal(l.Line, &m); err != nil {
			t.Errorf("client line is not JSON-RPC: %v", err)
			continue
		}
		switch {
		case m.isRequest():
			ours[string(m.ID)] = m.Method
		case m.isResponse():
			answers[string(m.ID)] = m
		}
	}

	sink := &replaySink{}
	dec := &replayDecider{}
	s := &Session{
		cfg:   Config{Agent: agent, Host: driver.Host{Sink: sink, Decider: dec}},
		log:   slog.New(slog.DiscardHandler),
		clock: quartz.NewReal(),
		tools: map[string]*driver.ToolCall{},
	}
	s.turn.Store(&turnState{ctx: context.Background(), cancel: func(error) {}})
	// As in openSession: updates before session/new answers are held.
	s.awaiting = true
	for _, l := range lines {
		var m rpcMessage
		if l.Dir == "in" && json.Unmarshal(l.Line, &m) == nil && m.isResponse() && ours[string(m.ID)] == schema.MethodSessionNew {
			var r schema.NewSessionResponse
			if schema.DecodeResult(m.Result, &r) == nil {
				sessionID = r.SessionId
			}
		}
	}

	var sum summary
	sum.add(fmt.Sprintf("# %s replayed through driver/acp (regenerate: go test ./driver/acp -run Replay -update)", name))
	announced := map[string]bool{}
	toolSeen := func(id, what string) {
		if announced[id] {
			return
		}
		if _, ok := wireUnannounced[agent]; !ok {
			t.Errorf("%s for tool call %q before any tool_call announced it", what, id)
		}
		announced[id] = true
	}
	prompts := 0
	unordered := map[string]int{}
	for i, l := range lines {
		if l.Dir != "in" {
			continue
		}
		var m rpcMessage
		if err := json.Unmarshal(l.Line, &m); err != nil {
			t.Errorf("line %d: the agent wrote a line that is not JSON-RPC: %.200s", i+1, l.Line)
			continue
		}
		switch {
		case m.isResponse():
			method := ours[string(m.ID)]
			if m.Error != nil {
				sum.add(fmt.Sprintf("%s: error %d", method, m.Error.Code))
				continue
			}
			before := sink.len()
			line, sid := describeResult(t, method, m.Result)
			switch method {
			case schema.MethodInitialize:
				_ = schema.DecodeResult(m.Result, &s.init) // checked by describeResult
			case schema.MethodSessionNew:
				var r schema.NewSessionResponse
				if err := schema.DecodeResult(m.Result, &r); err == nil {
					s.applyMu.Lock()
					s.id = sid
					s.applyMu.Unlock()
					s.opened(r.Modes, r.ConfigOptions, false)
				}
				line += " -> " + describeEvents(ordered(sink.since(before)))
			}
			if method == schema.MethodSessionPrompt {
				prompts++
			}
			sum.add(line)
		case m.Method == schema.MethodSessionUpdate:
			var n schema.SessionNotification
			if err := json.Unmarshal(m.Params, &n); err != nil {
				t.Errorf("line %d: session/update does not decode: %v", i+1, err)
				continue
			}
			kind := n.Update.Kind()
			if _, ok := unorderedKinds[kind]; ok {
				unordered[kind]++
			}
			if n.Update.Unknown != nil {
				if _, ok := wireRawKinds[kind]; !ok {
					t.Errorf("line %d: update kind %q is unknown to the decoder", i+1, kind)
				}
			}
			if n.SessionId != sessionID {
				t.Errorf("line %d: update for session %q, not the session %q", i+1, n.SessionId, sessionID)
			}
			switch {
			case n.Update.ToolCall != nil:
				announced[n.Update.ToolCall.ToolCallId] = true
			case n.Update.ToolCallUpdate != nil:
				toolSeen(n.Update.ToolCallUpdate.ToolCallId, "tool_call_update")
			}
			before := sink.len()
			s.onUpdate(m.Params)
			if _, ok := unorderedKinds[kind]; !ok {
				sum.add("update " + kind + " -> " + describeEvents(sink.since(before)))
			}
		case m.Method == schema.MethodSessionRequestPermission:
			var r schema.RequestPermissionRequest
			if err := json.Unmarshal(m.Params, &r); err != nil {
				t.Errorf("line %d: request_permission does not decode: %v", i+1, err)
				continue
			}
			toolSeen(r.ToolCall.ToolCallId, "request_permission")
			var kinds []string
			for _, o := range r.Options {
				switch o.Kind {
				case schema.PermissionAllowOnce, schema.PermissionAllowAlways, schema.PermissionRejectOnce, schema.PermissionRejectAlways:
				default:
					t.Errorf("line %d: permission option %q has kind %q", i+1, o.OptionId, o.Kind)
				}
				kinds = append(kinds, string(o.Kind))
			}
			answer, ok := answers[string(m.ID)]
			if !ok {
				t.Errorf("line %d: tai never answered permission request %s", i+1, m.ID)
				continue
			}
			var recorded schema.RequestPermissionResponse
			if err := schema.DecodeResult(answer.Result, &recorded); err != nil {
				t.Errorf("line %d: tai's recorded answer does not decode: %v", i+1, err)
				continue
			}
			dec.next = recorded
			before := sink.len()
			got, err := s.requestPermission(context.Background(), m.Params)
			if err != nil {
				t.Errorf("line %d: requestPermission: %v", i+1, err)
				continue
			}
			// The replayed decision goes back on the wire as it did then.
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(recorded)
			if !bytes.Equal(gotJSON, wantJSON) {
				t.Errorf("line %d: replayed answer %s, recorded %s", i+1, gotJSON, wantJSON)
			}
			sum.add(fmt.Sprintf("request %s [%s] -> %s", m.Method, strings.Join(kinds, " "), describeEvents(sink.since(before))))
		case m.isRequest():
			sum.add("request " + m.Method + checkClientRequest(t, i+1, m))
		case strings.HasPrefix(m.Method, "_"):
			// ACP's extension methods start with an underscore; the driver
			// ignores the notifications it does not know
			// (claude-agent-acp 0.101's and codex-acp 2.x's _auth/status_update).
			sum.add("extension notification " + m.Method)
		default:
			t.Errorf("line %d: notification %q is not ACP", i+1, m.Method)
		}
	}
	if len(unordered) > 0 {
		var kinds []string
		for k := range unordered {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			sum.add(fmt.Sprintf("unordered update %s ×%d", k, unordered[k]))
		}
	}
	if prompts != 1 {
		t.Errorf("%d session/prompt responses, want 1", prompts)
	}
	var open []string
	for id, tc := range s.tools {
		if tc.Status != "completed" && tc.Status != "failed" {
			open = append(open, fmt.Sprintf("%s (%s, %s)", id, tc.Kind, tc.Status))
		}
	}
	sort.Strings(open)
	if len(open) > 0 {
		t.Errorf("tool calls never finished: %s", strings.Join(open, ", "))
	}
	for _, ev := range sink.since(0) {
		if ev.Type == driver.EventError {
			t.Errorf("the driver reported an error: %s: %s", ev.Error.Code, ev.Error.Message)
		}
	}
	return sum.String()
}

func readWire(t *testing.T, path string) []wireLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []wireLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var l wireLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: a line is not {dir, line}: %v", path, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkClientRequest decodes an fs/terminal request from the agent, or
// accepts a listed extension; it returns a note for the summary.
func checkClientRequest(t reporter, line int, m rpcMessage) string {
	t.Helper()
	var v any
	switch m.Method {
	case schema.MethodFsReadTextFile:
		v = &schema.ReadTextFileRequest{}
	case schema.MethodFsWriteTextFile:
		v = &schema.WriteTextFileRequest{}
	case schema.MethodTerminalCreate:
		v = &schema.CreateTerminalRequest{}
	case schema.MethodTerminalOutput:
		v = &schema.TerminalOutputRequest{}
	case schema.MethodTerminalWaitForExit:
		v = &schema.WaitForTerminalExitRequest{}
	case schema.MethodTerminalKill:
		v = &schema.KillTerminalRequest{}
	case schema.MethodTerminalRelease:
		v = &schema.ReleaseTerminalRequest{}
	default:
		if _, ok := wireExtensions[m.Method]; !ok {
			t.Errorf("line %d: the agent calls %q, which is neither ACP nor a listed extension", line, m.Method)
		}
		return " (extension)"
	}
	if err := json.Unmarshal(m.Params, v); err != nil {
		t.Errorf("line %d: %s params do not decode: %v", line, m.Method, err)
	}
	return ""
}

// describeResult decodes the response to one of tai's requests the way the
// driver does and describes the stable parts; it returns the session id
// of session/new.
func describeResult(t reporter, method string, raw json.RawMessage) (string, string) {
	t.Helper()
	switch method {
	case schema.MethodInitialize:
		var r schema.InitializeResponse
		if err := schema.DecodeResult(raw, &r); err != nil {
			t.Errorf("initialize result does not decode: %v", err)
			return method + ": undecodable", ""
		}
		agent := "(no agentInfo)"
		if r.AgentInfo != nil {
			agent = r.AgentInfo.Name + " " + r.AgentInfo.Version
		}
		ac := r.AgentCapabilities
		return fmt.Sprintf("%s: protocol %d, agent %s, auth methods %d, loadSession %v, resume %v, close %v, embedded context %v, images %v",
			method, r.ProtocolVersion, agent, len(r.AuthMethods), ac.LoadSession, ac.SessionCapabilities.Resume != nil,
			ac.SessionCapabilities.Close != nil, ac.PromptCapabilities.EmbeddedContext, ac.PromptCapabilities.Image), ""
	case schema.MethodSessionNew:
		var r schema.NewSessionResponse
		if err := schema.DecodeResult(raw, &r); err != nil {
			t.Errorf("session/new result does not decode: %v", err)
			return method + ": undecodable", ""
		}
		out := method + ":"
		if r.Modes != nil {
			var ids []string
			for _, m := range r.Modes.AvailableModes {
				ids = append(ids, m.Id)
			}
			out += fmt.Sprintf(" modes [%s] (current %s)", strings.Join(ids, " "), r.Modes.CurrentModeId)
		} else {
			out += " no modes"
		}
		var opts []string
		for _, o := range convertConfig(r.ConfigOptions) {
			opts = append(opts, o.ID+"("+o.Category+")")
		}
		out += fmt.Sprintf(", config options [%s]", strings.Join(opts, " "))
		if len(r.Models) > 0 {
			out += ", legacy models block"
		}
		return out, r.SessionId
	case schema.MethodSessionPrompt:
		var r schema.PromptResponse
		if err := schema.DecodeResult(raw, &r); err != nil {
			t.Errorf("session/prompt result does not decode: %v", err)
			return method + ": undecodable", ""
		}
		switch r.StopReason {
		case "end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled":
		default:
			t.Errorf("stop reason %q is not ACP's", r.StopReason)
		}
		usage := ""
		if u, err := r.DecodeUsage(); err != nil {
			t.Errorf("session/prompt usage does not decode: %v", err)
		} else if u != nil {
			usage = ", with usage"
		}
		return fmt.Sprintf("%s: stop reason %s%s", method, r.StopReason, usage), ""
	}
	return method + ": answered", ""
}

// describeEvents names the events one wire message produced.
func describeEvents(evs []driver.Event) string {
	if len(evs) == 0 {
		return "(nothing)"
	}
	var parts []string
	for _, ev := range evs {
		d := string(ev.Type)
		switch ev.Type {
		case driver.EventSessionStarted:
			d += "(mode " + ev.Started.CurrentMode + ")"
		case driver.EventMessage:
			d += "(" + string(ev.Message.Role) + ")"
		case driver.EventToolCall:
			d += fmt.Sprintf("(%s, %s)", ev.ToolCall.Kind, ev.ToolCall.Status)
		case driver.EventPermissionAsked:
			d += "(" + string(ev.Permission.ToolCall.Kind) + ")"
		case driver.EventPermissionDecided:
			d += "(" + ev.Decision.Verdict + ")"
		case driver.EventCommands:
			d += fmt.Sprintf("(%d)", len(ev.Commands))
		case driver.EventConfigOptions:
			var ids []string
			for _, o := range ev.Config {
				ids = append(ids, o.ID)
			}
			d += "(" + strings.Join(ids, " ") + ")"
		case driver.EventModeChanged:
			d += "(" + ev.Mode.ID + ")"
		case driver.EventRaw:
			d += "(" + string(ev.Raw.Kind) + ")"
		case driver.EventError:
			d += "(" + ev.Error.Code + ")"
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, " ")
}

// summary collects lines, folding repeats into "×N".
type summary struct {
	lines []string
	count []int
}

func (s *summary) add(line string) {
	if n := len(s.lines); n > 0 && s.lines[n-1] == line {
		s.count[n-1]++
		return
	}
	s.lines = append(s.lines, line)
	s.count = append(s.count, 1)
}

func (s *summary) String() string {
	var b strings.Builder
	for i, l := range s.lines {
		b.WriteString(l)
		if s.count[i] > 1 {
			fmt.Fprintf(&b, " ×%d", s.count[i])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// lineDiff shows the lines that differ, for a failure message.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %s\n   got %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// errs records what replay reports.
type errs struct{ got []string }

func (e *errs) Helper() {}
func (e *errs) Errorf(format string, args ...any) {
	e.got = append(e.got, fmt.Sprintf(format, args...))
}

// The checks can fail: a transcript with each kind of fault.
func TestReplayChecks(t *testing.T) {
	wire := []string{
		`{"dir":"out","line":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}}`,
		`{"dir":"in","line":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}}`,
		`{"dir":"out","line":{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/ws","mcpServers":[]}}}`,
		`{"dir":"in","line":{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}}`,
		`{"dir":"out","line":{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}}`,
		`{"dir":"in","line":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"ghost","status":"completed"}}}}`,
		`{"dir":"in","line":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"brand_new_kind"}}}}`,
		`{"dir":"in","line":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"other","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}}`,
		`{"dir":"in","line":{"jsonrpc":"2.0","id":7,"method":"weird/method","params":{}}}`,
		`{"dir":"in","line":{"jsonrpc":"2.0","method":"vendor/notice","params":{}}}`,
		`{"dir":"in","line":{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Run","kind":"execute","status":"pending"}}}}`,
		`{"dir":"in","line":{"jsonrpc":"2.0","id":2,"result":{"stopReason":"finished"}}}`,
	}
	var lines []wireLine
	for _, w := range wire {
		var l wireLine
		if err := json.Unmarshal([]byte(w), &l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	var e errs
	replay(&e, lines, "faulty", "faulty")
	for _, want := range []string{
		`tool_call_update for tool call "ghost" before any tool_call`,
		`update kind "brand_new_kind" is unknown`,
		`update for session "other"`,
		`the agent calls "weird/method"`,
		`notification "vendor/notice" is not ACP`,
		`stop reason "finished" is not ACP's`,
		`tool calls never finished: t1 (execute, pending)`,
	} {
		if !slices.ContainsFunc(e.got, func(g string) bool { return strings.Contains(g, want) }) {
			t.Errorf("replay did not report %q; it reported:\n%s", want, strings.Join(e.got, "\n"))
		}
	}
}
