package modelserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// fallbackText answers requests when the script has no default/untooled turn.
const fallbackText = "OK."

// apiRequest is what the turn logic needs from a provider request.
type apiRequest struct {
	model        string
	stream       bool
	tools        []offeredTool
	wantJSON     bool // structured output requested
	schema       any  // its schema in ordered form; nil for free-form JSON
	forced       string
	includeUsage bool
	body         []byte
	text         *string // lazily: every string in the body, for match/ignore
}

// offeredTool is one tool the request declares.
type offeredTool struct {
	name   string
	custom bool // freeform input (Responses/Chat "custom" tools), not JSON arguments
	schema any  // parameters schema, ordered form
}

func (r *apiRequest) toolNames() []string {
	names := make([]string, 0, len(r.tools))
	for _, t := range r.tools {
		names = append(names, t.name)
	}
	return names
}

func (r *apiRequest) tool(name string) *offeredTool {
	for i := range r.tools {
		if r.tools[i].name == name {
			return &r.tools[i]
		}
	}
	return nil
}

// contains reports whether the body mentions needle, either verbatim or
// inside a decoded JSON string (so quotes and newlines need no escaping).
func (r *apiRequest) contains(needle string) bool {
	if bytes.Contains(r.body, []byte(needle)) {
		return true
	}
	if r.text == nil {
		var b strings.Builder
		if v, err := decodeJSON(r.body); err == nil {
			collectStrings(v, &b)
		}
		t := b.String()
		r.text = &t
	}
	return strings.Contains(*r.text, needle)
}

func collectStrings(v any, b *strings.Builder) {
	switch v := v.(type) {
	case string:
		b.WriteString(v)
		b.WriteByte('\n')
	case []any:
		for _, e := range v {
			collectStrings(e, b)
		}
	case *object:
		for _, k := range v.keys {
			collectStrings(v.vals[k], b)
		}
	}
}

// reply is a provider-neutral answer.
type reply struct {
	id         int // request number, for response/message ids
	turn       int // consumed turn index or -1
	consumed   bool
	reason     string
	thinking   string
	text       string
	calls      []callOut
	errStatus  int
	errMsg     string
	retryAfter time.Duration
	window     string // a limit's plan window (Limit.Window)
	delay      time.Duration
	chunkDelay time.Duration
	created    time.Time
	usage      usage
}

// callOut is one resolved tool call.
type callOut struct {
	id     string
	name   string
	custom bool            // send input, not args
	args   json.RawMessage // JSON object, for function tools
	input  string          // for custom tools
}

type usage struct{ input, output, reasoning int }

func (u usage) total() int { return u.input + u.output }

// plan picks the turn that answers req and resolves it against what the
// request offers. It is the only place scripted state advances.
func (s *Server) plan(req *apiRequest, n int) *reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc := s.script
	rp := &reply{id: n, turn: -1, created: s.now()}
	cwd := s.cwdLocked()
	consumeAll := sc.Consume == ConsumeAll

	if l := sc.Limit; l != nil {
		if s.answered >= l.After && (l.Until.IsZero() || rp.created.Before(l.Until)) && (l.Times == 0 || s.refused < l.Times) && (!l.Tooled || len(req.tools) > 0) {
			s.refused++
			rp.reason = "limited"
			rp.errStatus, rp.errMsg, rp.retryAfter, rp.window = http.StatusTooManyRequests, l.Message, time.Hour, l.Window
			if !l.Until.IsZero() {
				rp.retryAfter = max(l.Until.Sub(rp.created), time.Second)
			}
			if l.RetryAfter > 0 {
				rp.retryAfter = l.RetryAfter
			}
			return rp
		}
		s.answered++
	}
	var t *Turn
	side := func(reason string) {
		rp.reason = reason
		t = firstTurn(sc.Untooled, sc.Default)
	}
	switch {
	case s.ignored(sc, req):
		side("ignored")
	case !consumeAll && len(req.tools) == 0:
		side("untooled")
	case !consumeAll && req.forced != "":
		side("forced tool " + req.forced)
	case s.next >= len(sc.Turns):
		rp.reason = "exhausted"
		t = firstTurn(sc.Default)
	default:
		next := &sc.Turns[s.next]
		if next.Match != "" && !req.contains(substText(next.Match, cwd)) {
			side(fmt.Sprintf("turn %d waits for %q", s.next, next.Match))
			break
		}
		t = next
		rp.turn, rp.consumed = s.next, true
		s.next++
	}
	s.resolve(rp, t, req, cwd)
	return rp
}

func (s *Server) ignored(sc *Script, req *apiRequest) bool {
	for _, ig := range sc.Ignore {
		if ig != "" && req.contains(ig) {
			return true
		}
	}
	return false
}

func firstTurn(ts ...*Turn) *Turn {
	for _, t := range ts {
		if t != nil {
			return t
		}
	}
	return &Turn{Text: fallbackText}
}

// resolve fills rp from turn t: picks each call's alternative, substitutes
// {{CWD}}, and decides the text for structured-output requests.
func (s *Server) resolve(rp *reply, t *Turn, req *apiRequest, cwd string) {
	rp.delay, rp.chunkDelay = t.Delay, t.ChunkDelay
	if t.Error != 0 {
		rp.errStatus, rp.errMsg, rp.retryAfter = t.Error, t.Message, t.RetryAfter
		if rp.retryAfter == 0 {
			rp.retryAfter = time.Second
		}
		return
	}
	rp.thinking = substText(t.Thinking, cwd)
	var scripted json.RawMessage
	if len(t.JSON) > 0 {
		scripted = substJSON(t.JSON, cwd)
	}
	switch {
	case req.forced != "":
		// Tool-forced structured output: the answer is a call of that tool.
		args := scripted
		if args == nil || !bytes.HasPrefix(bytes.TrimSpace(args), []byte("{")) {
			var schema any
			if ft := req.tool(req.forced); ft != nil {
				schema = ft.schema
			}
			args = mustMarshal(synthesize(schema))
		}
		rp.calls = append(rp.calls, callOut{id: s.callID(), name: req.forced, args: args})
	default:
		for _, c := range t.Calls {
			rp.calls = append(rp.calls, s.resolveCall(c, req, cwd))
		}
		switch {
		case scripted != nil:
			rp.text = string(scripted)
		case req.wantJSON && len(rp.calls) == 0:
			if txt := strings.TrimSpace(substText(t.Text, cwd)); txt != "" && json.Valid([]byte(txt)) {
				rp.text = txt
			} else {
				rp.text = string(mustMarshal(synthesize(req.schema)))
			}
		default:
			rp.text = substText(t.Text, cwd)
		}
	}
	out := len(rp.thinking) + len(rp.text)
	for _, c := range rp.calls {
		out += len(c.name) + len(c.args) + len(c.input)
	}
	rp.usage = usage{input: inputTokens(req.body), output: 1 + out/4, reasoning: len(rp.thinking) / 4}
}

func (s *Server) callID() string {
	s.calls++
	return fmt.Sprintf("call_%d", s.calls)
}

func (s *Server) resolveCall(c ToolCall, req *apiRequest, cwd string) callOut {
	opt := c.Options[0]
	for _, o := range c.Options {
		if req.tool(o.Name) != nil {
			opt = o
			break
		}
	}
	out := callOut{id: s.callID(), name: opt.Name}
	args := substJSON(opt.Args, cwd)
	var v any
	if len(args) > 0 {
		v, _ = decodeJSON(args)
	}
	tool := req.tool(opt.Name)
	if tool != nil && tool.custom {
		out.custom = true
		switch v := v.(type) {
		case string:
			out.input = v
		case *object:
			// {"input": "..."} or any single-string object unwraps to the string.
			if len(v.keys) == 1 {
				if s, ok := v.vals[v.keys[0]].(string); ok {
					out.input = s
					break
				}
			}
			out.input = string(args)
		}
		return out
	}
	switch v := v.(type) {
	case *object:
		out.args = mustMarshal(v)
	case string:
		// A freeform patch sent to a function tool: wrap it as the tool's only
		// string parameter (codex's function-style apply_patch takes "input").
		var schema any
		if tool != nil {
			schema = tool.schema
		}
		out.args = mustMarshal(obj(soleStringParam(schema), v))
	default:
		out.args = json.RawMessage("{}")
	}
	return out
}

// soleStringParam names the parameter to carry a bare string argument.
func soleStringParam(schema any) string {
	o, ok := schema.(*object)
	if !ok {
		return "input"
	}
	if req, err := asStrings(o.vals["required"]); err == nil && len(req) == 1 {
		return req[0]
	}
	var names []string
	if props, ok := o.vals["properties"].(*object); ok {
		for _, k := range props.keys {
			if po, ok := props.vals[k].(*object); ok && schemaType(po) == "string" {
				names = append(names, k)
			}
		}
	}
	if len(names) == 1 {
		return names[0]
	}
	return "input"
}

const cwdVar = "{{CWD}}"

func substText(s, cwd string) string { return strings.ReplaceAll(s, cwdVar, cwd) }

// substJSON replaces {{CWD}} inside JSON text. The placeholder has no
// characters JSON escapes, so a byte replacement with the escaped path keeps
// the document valid and its key order intact.
func substJSON(raw json.RawMessage, cwd string) json.RawMessage {
	if !bytes.Contains(raw, []byte(cwdVar)) {
		return raw
	}
	esc := mustMarshal(cwd)
	return bytes.ReplaceAll(raw, []byte(cwdVar), esc[1:len(esc)-1])
}

// inputTokens is a deterministic, nonzero stand-in for a tokenizer.
func inputTokens(body []byte) int { return 1 + len(body)/4 }

func defaultErrorMessage(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "Rate limit exceeded (scripted)."
	case 529:
		return "Overloaded (scripted)."
	}
	return fmt.Sprintf("Scripted error %d: %s.", status, http.StatusText(status))
}

// modelOf reads the "model" field of a JSON body, if any.
func modelOf(body []byte) string {
	var m struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Model
}

// parseSchema turns a raw schema into ordered form; nil when absent or invalid.
func parseSchema(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil
	}
	return v
}
