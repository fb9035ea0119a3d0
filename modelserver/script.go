package modelserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/tai-dev/tai/internal/readlimit"
)

// ConsumeMode says which requests use up scripted turns.
type ConsumeMode string

const (
	// ConsumeTooled: only requests that offer tools consume turns (default).
	// Agents' untooled side requests (titles, summaries) then never eat the script.
	ConsumeTooled ConsumeMode = "tooled"
	// ConsumeAll: every request that is not ignored consumes a turn.
	ConsumeAll ConsumeMode = "all"
)

// Script is a scripted conversation. The zero Script answers every request
// with the built-in fallback text.
type Script struct {
	Turns    []Turn      // consumed in order
	Default  *Turn       // answer once Turns are exhausted
	Untooled *Turn       // answer to requests that do not consume (no tools, ignored, waiting for a match)
	Consume  ConsumeMode // "" means ConsumeTooled
	Ignore   []string    // tooled requests whose body contains any of these do not consume
	Cwd      string      // value of {{CWD}}; "" means Options.Cwd
	Models   []string    // served by the model-list endpoints; nil means DefaultModels
	Limit    *Limit      // an account's usage limit: 429s after some requests, until a time
}

// Limit makes the server an account at its usage limit: once After
// generation requests were answered, every one is refused with the
// dialect's 429 (its rate-limit headers, Retry-After the time to Until)
// until Until, without consuming a turn; then the script goes on. A zero
// Until never clears.
type Limit struct {
	After   int       // requests answered before the limit (0: from the first)
	Until   time.Time // when it clears (script: "until", RFC 3339)
	Message string    // the error message ("" = the default 429 text)
	// RetryAfter, when set, is what the 429s say instead of the time to
	// Until: a short one lets a real agent's own retries run out while
	// the limit holds (qwen-code 0.24.4 retries a 429 7 times, waiting
	// what Retry-After says, capped).
	RetryAfter time.Duration
	// Times, when > 0, clears the limit after that many refusals, whatever
	// the clock says: a test's agent meets the limit, and its resume after
	// the reset the 429s announced finds it cleared, on a machine of any
	// speed (a real agent's first request may come after any "until").
	Times int
	// Tooled limits only the requests that offer tools (an agent's turns),
	// not its side requests (a session title): with Times, the refusals
	// are the turn's, whichever request an agent happens to send first.
	Tooled bool
	// Window, when set, is the Claude plan window that ran out
	// (five_hour, seven_day, seven_day_opus, ...): Anthropic's 429s also
	// carry the unified limiter's headers, as a subscription's do.
	Window string
}

// Turn is one scripted model answer.
type Turn struct {
	Thinking   string          // reasoning, streamed before the text
	Text       string          // the reply text (a preamble when there are calls)
	Calls      []ToolCall      // tool calls, in order
	JSON       json.RawMessage // when set, the reply text is this JSON value
	Delay      time.Duration   // wait before answering
	ChunkDelay time.Duration   // wait between streamed events
	Error      int             // when nonzero, answer with this HTTP error status
	Message    string          // error message (Error only)
	RetryAfter time.Duration   // retry-after for 429/529; 0 means 1s
	Match      string          // the turn waits for a request whose body contains this
}

// ToolCall is one tool call. Options are per-agent-family alternatives in
// preference order: the first whose name the request offers is called,
// otherwise the first.
type ToolCall struct {
	Options []ToolOption
}

// ToolOption is one way to express a call.
type ToolOption struct {
	Name string
	// Args is a JSON object, or a JSON string for freeform tools such as
	// codex's custom apply_patch. Empty means {}.
	Args json.RawMessage
}

// DefaultModels are listed by the model endpoints when a script names none.
var DefaultModels = []string{
	"fake-model",
	"gpt-5.3-codex",
	"claude-sonnet-4-5",
	"gemini-2.5-flash",
	"gemini-2.5-pro",
}

// LoadScript reads a script file. Files ending in .yaml or .yml are YAML,
// .json is JSON, anything else is sniffed.
func LoadScript(path string) (*Script, error) {
	data, err := readlimit.ReadFile(path, readlimit.Script)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	format := ""
	switch strings.ToLower(filepath.Ext(path)) {
	case ".json":
		format = "json"
	case ".yaml", ".yml":
		format = "yaml"
	}
	s, err := ParseScript(data, format)
	if err != nil {
		return nil, fmt.Errorf("load script %s: %w", path, err)
	}
	return s, nil
}

// ParseScript parses a script. format is "json", "yaml" (or "yml"), or ""
// to sniff: a document starting with '{' is JSON, anything else YAML.
func ParseScript(data []byte, format string) (*Script, error) {
	format = strings.ToLower(format)
	if format == "" {
		format = "yaml"
		if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
			format = "json"
		}
	}
	var (
		root any
		err  error
	)
	switch format {
	case "json":
		root, err = decodeJSON(data)
	case "yaml", "yml":
		root, err = decodeYAML(data)
	default:
		return nil, fmt.Errorf("script: unknown format %q (want json or yaml)", format)
	}
	if err != nil {
		return nil, fmt.Errorf("script: %s: %w", format, err)
	}
	s, err := scriptFromValue(root)
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate checks a script built in Go the same way ParseScript checks files.
func (s *Script) Validate() error {
	switch s.Consume {
	case "", ConsumeTooled, ConsumeAll:
	default:
		return fmt.Errorf("script: consume: %q is neither %q nor %q", s.Consume, ConsumeTooled, ConsumeAll)
	}
	if s.Cwd != "" && !filepath.IsAbs(s.Cwd) {
		return fmt.Errorf("script: cwd: %q is not absolute", s.Cwd)
	}
	for i := range s.Turns {
		if err := s.Turns[i].validate(); err != nil {
			return fmt.Errorf("script: turns[%d]: %w", i, err)
		}
	}
	for _, e := range []struct {
		name string
		t    *Turn
	}{{"default", s.Default}, {"untooled", s.Untooled}} {
		name, t := e.name, e.t
		if t == nil {
			continue
		}
		if err := t.validate(); err != nil {
			return fmt.Errorf("script: %s: %w", name, err)
		}
		if t.Match != "" {
			return fmt.Errorf("script: %s: \"match\" only applies to turns", name)
		}
	}
	return nil
}

func (t *Turn) validate() error {
	if t.Error != 0 {
		if t.Error < 400 || t.Error > 599 {
			return fmt.Errorf("\"error\": %d is not an HTTP error status (400-599)", t.Error)
		}
		if t.Text != "" || t.Thinking != "" || len(t.Calls) > 0 || len(t.JSON) > 0 {
			return errors.New("an error turn cannot also have text, thinking, tool calls or json")
		}
	} else if t.Message != "" || t.RetryAfter != 0 {
		return errors.New("\"message\" and \"retry_after\" need \"error\"")
	}
	if t.Delay < 0 || t.ChunkDelay < 0 || t.RetryAfter < 0 {
		return errors.New("delays must not be negative")
	}
	if len(t.JSON) > 0 && !json.Valid(t.JSON) {
		return errors.New("\"json\": invalid JSON")
	}
	for i, c := range t.Calls {
		if len(c.Options) == 0 {
			return fmt.Errorf("call %d: no tool named", i)
		}
		for _, o := range c.Options {
			if o.Name == "" {
				return fmt.Errorf("call %d: empty tool name", i)
			}
			if len(o.Args) == 0 {
				continue
			}
			var v any
			if err := json.Unmarshal(o.Args, &v); err != nil {
				return fmt.Errorf("tool %q: args: %w", o.Name, err)
			}
			switch v.(type) {
			case map[string]any, string, nil:
			default:
				return fmt.Errorf("tool %q: args must be an object or a string (for freeform tools)", o.Name)
			}
		}
	}
	return nil
}

// commentKey reports keys that are documentation, not configuration.
func commentKey(k string) bool {
	return strings.HasPrefix(k, "_") || strings.HasPrefix(k, "//") || k == "comment" || k == "description"
}

func scriptFromValue(root any) (*Script, error) {
	o, ok := root.(*object)
	if !ok {
		return nil, fmt.Errorf("top level: want an object, got %s", kindOf(root))
	}
	s := &Script{}
	for _, k := range o.keys {
		v := o.vals[k]
		var err error
		switch k {
		case "turns":
			arr, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("turns: want a list, got %s", kindOf(v))
			}
			for i, tv := range arr {
				t, err := turnFromValue(tv)
				if err != nil {
					return nil, fmt.Errorf("turns[%d]: %w", i, err)
				}
				s.Turns = append(s.Turns, *t)
			}
		case "default", "untooled":
			var t *Turn
			if t, err = turnFromValue(v); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			if k == "default" {
				s.Default = t
			} else {
				s.Untooled = t
			}
		case "consume":
			var c string
			c, err = asString(v)
			s.Consume = ConsumeMode(c)
		case "ignore":
			s.Ignore, err = asStrings(v)
		case "models":
			s.Models, err = asStrings(v)
		case "cwd":
			s.Cwd, err = asString(v)
		case "limit":
			s.Limit, err = limitFromValue(v)
		default:
			if !commentKey(k) {
				return nil, fmt.Errorf("unknown key %q (want turns, default, untooled, consume, ignore, cwd, models, limit)", k)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	return s, nil
}

func turnFromValue(v any) (*Turn, error) {
	o, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("want an object, got %s", kindOf(v))
	}
	t := &Turn{}
	content := false
	_, hasArgs := o.get("args")
	if _, hasTool := o.get("tool"); hasArgs && !hasTool {
		return nil, errors.New("\"args\" without \"tool\"")
	}
	for _, k := range o.keys {
		v := o.vals[k]
		var err error
		switch k {
		case "text":
			t.Text, err = asString(v)
			content = true
		case "thinking":
			t.Thinking, err = asString(v)
			content = true
		case "message":
			t.Message, err = asString(v)
		case "match":
			t.Match, err = asString(v)
		case "json":
			t.JSON, err = marshalValue(v)
			content = true
		case "error":
			var n float64
			n, err = asNumber(v)
			if err == nil && n != math.Trunc(n) {
				err = errors.New("want an integer HTTP status")
			}
			t.Error = int(n)
			content = true
		case "delay":
			t.Delay, err = asDuration(v, time.Second)
		case "chunk_delay":
			t.ChunkDelay, err = asDuration(v, time.Millisecond)
		case "retry_after":
			t.RetryAfter, err = asDuration(v, time.Second)
		case "tool":
			if _, many := o.get("tools"); many {
				return nil, errors.New("use either \"tool\" or \"tools\", not both")
			}
			var c ToolCall
			c, err = callFromValues(v, o.vals["args"], hasArgs)
			t.Calls = append(t.Calls, c)
			content = true
		case "args":
			// read together with "tool"
		case "tools":
			arr, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("tools: want a list, got %s", kindOf(v))
			}
			for i, cv := range arr {
				co, ok := cv.(*object)
				if !ok {
					return nil, fmt.Errorf("tools[%d]: want an object, got %s", i, kindOf(cv))
				}
				for _, ck := range co.keys {
					if ck != "tool" && ck != "args" && !commentKey(ck) {
						return nil, fmt.Errorf("tools[%d]: unknown key %q (want tool, args)", i, ck)
					}
				}
				tv, ok := co.get("tool")
				if !ok {
					return nil, fmt.Errorf("tools[%d]: missing \"tool\"", i)
				}
				av, has := co.get("args")
				c, err := callFromValues(tv, av, has)
				if err != nil {
					return nil, fmt.Errorf("tools[%d]: %w", i, err)
				}
				t.Calls = append(t.Calls, c)
			}
			content = true
		default:
			if !commentKey(k) {
				return nil, fmt.Errorf("unknown key %q (want text, thinking, tool, args, tools, json, delay, chunk_delay, error, message, retry_after, match)", k)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	if !content {
		return nil, errors.New("empty turn: want at least one of text, thinking, tool, tools, json, error")
	}
	return t, nil
}

// callFromValues reads "tool" (a name, or a map of name → args in
// preference order) with its optional "args".
func callFromValues(tool, args any, hasArgs bool) (ToolCall, error) {
	switch tv := tool.(type) {
	case string:
		if tv == "" {
			return ToolCall{}, errors.New("empty tool name")
		}
		opt := ToolOption{Name: tv}
		if hasArgs && args != nil {
			b, err := argsJSON(args)
			if err != nil {
				return ToolCall{}, fmt.Errorf("args: %w", err)
			}
			opt.Args = b
		}
		return ToolCall{Options: []ToolOption{opt}}, nil
	case *object:
		if hasArgs {
			return ToolCall{}, errors.New("\"args\" goes inside the tool map when \"tool\" is a map")
		}
		if len(tv.keys) == 0 {
			return ToolCall{}, errors.New("empty tool map")
		}
		var c ToolCall
		for _, name := range tv.keys {
			opt := ToolOption{Name: name}
			if a := tv.vals[name]; a != nil {
				b, err := argsJSON(a)
				if err != nil {
					return ToolCall{}, fmt.Errorf("%s: %w", name, err)
				}
				opt.Args = b
			}
			c.Options = append(c.Options, opt)
		}
		return c, nil
	}
	return ToolCall{}, fmt.Errorf("want a tool name or a map of name to args, got %s", kindOf(tool))
}

func argsJSON(v any) (json.RawMessage, error) {
	switch v.(type) {
	case *object, string:
		return marshalValue(v)
	}
	return nil, fmt.Errorf("want an object, or a string for freeform tools, got %s", kindOf(v))
}

func limitFromValue(v any) (*Limit, error) {
	o, ok := v.(*object)
	if !ok {
		return nil, fmt.Errorf("want an object {after, until, message, retry_after, times, tooled, window}, got %s", kindOf(v))
	}
	l := &Limit{}
	for _, k := range o.keys {
		var err error
		switch v := o.vals[k]; k {
		case "after":
			var f float64
			if f, err = asNumber(v); err == nil && (f < 0 || f != math.Trunc(f)) {
				err = errors.New("want a whole number of requests, not negative")
			}
			l.After = int(f)
		case "until":
			var u string
			if u, err = asString(v); err == nil {
				l.Until, err = time.Parse(time.RFC3339, u)
			}
		case "message":
			l.Message, err = asString(v)
		case "retry_after":
			l.RetryAfter, err = asDuration(v, time.Second)
		case "window":
			l.Window, err = asString(v)
		case "tooled":
			l.Tooled, err = asBool(v)
		case "times":
			var f float64
			if f, err = asNumber(v); err == nil && (f < 1 || f != math.Trunc(f)) {
				err = errors.New("want a whole number of refusals, at least 1")
			}
			l.Times = int(f)
		default:
			if !commentKey(k) {
				return nil, fmt.Errorf("unknown key %q (want after, until, message, retry_after, times, tooled, window)", k)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	return l, nil
}

func asBool(v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("want true or false, got %s", kindOf(v))
	}
	return b, nil
}

func asString(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %s", kindOf(v))
	}
	return s, nil
}

func asStrings(v any) ([]string, error) {
	if s, ok := v.(string); ok {
		return []string{s}, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of strings, got %s", kindOf(v))
	}
	out := make([]string, 0, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("[%d]: want a string, got %s", i, kindOf(e))
		}
		out = append(out, s)
	}
	return out, nil
}

func asNumber(v any) (float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want a number, got %s", kindOf(v))
	}
	f, err := n.Float64()
	if err != nil {
		return 0, fmt.Errorf("bad number %s: %w", n, err)
	}
	return f, nil
}

func asDuration(v any, unit time.Duration) (time.Duration, error) {
	f, err := asNumber(v)
	if err != nil {
		return 0, err
	}
	if f < 0 {
		return 0, errors.New("must not be negative")
	}
	return time.Duration(f * float64(unit)), nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case *object:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
