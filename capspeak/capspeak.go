// Package capspeak makes tai itself an agent that speaks stream-json (the
// agent-side binding of cap.md): a parent (a script, an editor, another
// tai through its stream-json driver) writes user messages and control
// requests on tai's stdin, one JSON object per line in Claude Code's
// input shapes, and reads tai's frames on stdout. Each user message is one
// turn of a single session with the agent tai drives; an ask that tai's
// policy cannot settle alone goes to the parent as a can_use_tool control
// request, the way Claude Code asks its host.
package capspeak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/internal/lines"
	"github.com/tai-dev/tai/policy"
)

// Protocol is what tai answers to initialize.
const Protocol = "tai-cap-stream-json/1"

// MaxLine bounds one input line; longer ones are skipped, with a warning.
const MaxLine = 64 << 20

// Writer is where protocol lines go: the same stdout as the frames, under
// the same lock (render.Frames).
type Writer interface {
	Write(v any) error
}

// Conn is the parent's side of the conversation.
type Conn struct {
	out        Writer
	log        *slog.Logger
	version    string
	turns      chan []driver.Content
	interrupts chan struct{}

	mu      sync.Mutex
	seq     int
	pending map[string]chan answer
	elicits map[string]bool // pending ids that are elicitations
	closed  bool            // the input ended: nobody will answer
}

type answer struct {
	allow   bool
	message string
	raw     json.RawMessage // an elicitation's answer
	err     error
}

// New returns a Conn writing to out.
func New(out Writer, logger *slog.Logger, version string) *Conn {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Conn{out: out, log: logger, version: version, turns: make(chan []driver.Content),
		interrupts: make(chan struct{}, 1), pending: map[string]chan answer{}, elicits: map[string]bool{}}
}

// Turns delivers each user message's prompt; it is closed when the input
// ends.
func (c *Conn) Turns() <-chan []driver.Content { return c.turns }

// Interrupts fires when the parent interrupts the running turn.
func (c *Conn) Interrupts() <-chan struct{} { return c.interrupts }

// input is one line of the parent's, in the union of the shapes tai reads.
type input struct {
	Type      string          `json:"type"`
	Message   *userMessage    `json:"message"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	} `json:"response"`
}

type userMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Serve reads the parent's lines until the input ends or ctx is done. A
// malformed or oversized line is skipped with a warning, never fatal: the
// parent may be newer than this tai.
func (c *Conn) Serve(ctx context.Context, in io.Reader) error {
	defer c.end()
	r := lines.New(in, 64<<10, MaxLine)
	for {
		line, skipped, _, err := r.Next()
		if skipped > 0 {
			c.log.Warn("cap-speak: input line over the limit skipped", "bytes", skipped, "limit", MaxLine)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if perr := c.handle(ctx, line); perr != nil {
				return perr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cap-speak: reading input: %w", err)
		}
	}
}

func (c *Conn) handle(ctx context.Context, line []byte) error {
	var m input
	if err := json.Unmarshal(line, &m); err != nil {
		c.log.Warn("cap-speak: input line is not a JSON object; skipped", "err", err)
		return nil
	}
	switch m.Type {
	case "user":
		p, err := prompt(m.Message)
		if err != nil {
			c.log.Warn("cap-speak: user message skipped", "err", err)
			return nil
		}
		select {
		case c.turns <- p:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	case "control_request":
		c.control(m.RequestID, m.Request)
	case "control_response":
		if m.Response != nil {
			c.resolve(m.Response.RequestID, m.Response.Subtype, m.Response.Response, m.Response.Error)
		}
	case "control_cancel_request", "keep_alive":
	default:
		c.log.Debug("cap-speak: unknown input type skipped", "type", m.Type)
	}
	return nil
}

// prompt turns a user message's content (a string, or content blocks)
// into prompt blocks.
func prompt(m *userMessage) ([]driver.Content, error) {
	if m == nil || len(m.Content) == 0 {
		return nil, errors.New("no message content")
	}
	var text string
	if json.Unmarshal(m.Content, &text) == nil {
		if text == "" {
			return nil, errors.New("empty message")
		}
		return []driver.Content{driver.TextContent(text)}, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return nil, fmt.Errorf("message content: %w", err)
	}
	var out []driver.Content
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			out = append(out, driver.TextContent(b.Text))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no text in the message")
	}
	return out, nil
}

// control answers the parent's control requests tai supports.
func (c *Conn) control(id string, raw json.RawMessage) {
	var req struct {
		Subtype string `json:"subtype"`
	}
	_ = json.Unmarshal(raw, &req)
	switch req.Subtype {
	case "initialize":
		c.respond(id, map[string]any{"protocol": Protocol, "version": c.version}, "")
	case "interrupt":
		select {
		case c.interrupts <- struct{}{}:
		default:
		}
		c.respond(id, map[string]any{}, "")
	default:
		c.respond(id, nil, fmt.Sprintf("unsupported control request %q", req.Subtype))
	}
}

func (c *Conn) respond(id string, body any, errMsg string) {
	resp := map[string]any{"request_id": id}
	if errMsg != "" {
		resp["subtype"], resp["error"] = "error", errMsg
	} else {
		resp["subtype"], resp["response"] = "success", body
	}
	if err := c.out.Write(map[string]any{"type": "control_response", "response": resp}); err != nil {
		c.log.Warn("cap-speak: writing a control response", "err", err)
	}
}

// Ask puts an ask to the parent as can_use_tool and waits for its answer
// (policy.Prompter, used as the policy's answerer). Without a parent to
// ask (the input ended) it abstains, and the non-interactive rule decides.
func (c *Conn) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return 0, policy.ErrNoAnswer
	}
	c.seq++
	id := "tai-" + strconv.Itoa(c.seq)
	ch := make(chan answer, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	input := json.RawMessage(`{}`)
	if len(req.ToolCall.RawInput) > 0 {
		input = req.ToolCall.RawInput
	}
	name := req.ToolCall.Title
	if name == "" {
		name = string(req.ToolCall.Kind)
	}
	err := c.out.Write(map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{
		"subtype": "can_use_tool", "tool_name": name, "input": input, "tool_use_id": req.ToolCall.ID,
		"permission_suggestions": nil, "tai": req,
	}})
	if err != nil {
		return 0, fmt.Errorf("asking the parent: %w", err)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return 0, a.err
		}
		if a.allow {
			return policy.AllowOnce, nil
		}
		return policy.DenyOnce, nil
	case <-ctx.Done():
		_ = c.out.Write(map[string]any{"type": "control_cancel_request", "request_id": id})
		return 0, ctx.Err()
	}
}

// resolve hands the parent's answer to the Ask waiting for it.
func (c *Conn) resolve(id, subtype string, body json.RawMessage, errMsg string) {
	c.mu.Lock()
	ch, ok := c.pending[id]
	isElicit := c.elicits[id]
	c.mu.Unlock()
	if !ok {
		c.log.Debug("cap-speak: answer to no pending request", "request_id", id)
		return
	}
	if subtype == "error" {
		ch <- answer{err: fmt.Errorf("the parent answered with an error: %s", errMsg)}
		return
	}
	if isElicit {
		ch <- answer{raw: body}
		return
	}
	var r struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		ch <- answer{err: fmt.Errorf("the parent's answer: %w", err)}
		return
	}
	switch r.Behavior {
	case "allow":
		ch <- answer{allow: true}
	case "deny":
		ch <- answer{message: r.Message}
	default:
		ch <- answer{err: fmt.Errorf("the parent's answer has behavior %q", r.Behavior)}
	}
}

// end: no more turns, and nobody to answer the asks still waiting.
func (c *Conn) end() {
	c.mu.Lock()
	c.closed = true
	for id, ch := range c.pending {
		select {
		case ch <- answer{err: policy.ErrNoAnswer}:
		default:
		}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.turns)
}

// Answer puts an elicitation to the parent as an "elicitation" control
// request, {"subtype":"elicitation","tai":<the request>}, and waits for its
// answer, {"action":"accept"|"decline"|"cancel","content":{...}}. Without
// a parent to ask it passes (elicit.ErrPass).
func (c *Conn) Answer(ctx context.Context, req driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return driver.ElicitationAnswer{}, elicit.ErrPass
	}
	c.seq++
	id := "tai-" + strconv.Itoa(c.seq)
	ch := make(chan answer, 1)
	c.pending[id], c.elicits[id] = ch, true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		delete(c.elicits, id)
		c.mu.Unlock()
	}()
	err := c.out.Write(map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{
		"subtype": "elicitation", "mode": req.Mode, "message": req.Message, "url": req.URL, "tai": req,
	}})
	if err != nil {
		return driver.ElicitationAnswer{}, fmt.Errorf("asking the parent: %w", err)
	}
	select {
	case a := <-ch:
		if errors.Is(a.err, policy.ErrNoAnswer) {
			return driver.ElicitationAnswer{}, elicit.ErrPass
		}
		if a.err != nil {
			return driver.ElicitationAnswer{}, a.err
		}
		var r struct {
			Action  driver.ElicitAction `json:"action"`
			Content map[string]any      `json:"content"`
		}
		if err := json.Unmarshal(a.raw, &r); err != nil {
			return driver.ElicitationAnswer{}, fmt.Errorf("the parent's answer: %w", err)
		}
		switch r.Action {
		case driver.ElicitAccept, driver.ElicitDecline, driver.ElicitCancel:
		default:
			return driver.ElicitationAnswer{}, fmt.Errorf("the parent's answer has action %q (want accept, decline or cancel)", r.Action)
		}
		return driver.ElicitationAnswer{Action: r.Action, Content: r.Content, Reason: "answered by the cap-speak parent"}, nil
	case <-ctx.Done():
		_ = c.out.Write(map[string]any{"type": "control_cancel_request", "request_id": id})
		return driver.ElicitationAnswer{}, ctx.Err()
	}
}
