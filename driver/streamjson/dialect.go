package streamjson

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tai-dev/tai/driver"
)

// Dialect names.
const (
	DialectClaude   = "claude"
	DialectQwen     = "qwen"
	DialectGemini   = "gemini"
	DialectCodex    = "codex"
	DialectOpenCode = "opencode"
	DialectCursor   = "cursor"
	DialectAmp      = "amp"
	DialectTai      = "tai" // tai itself: tai --cap-speak stream-json
)

// Dialect is one CLI's flavour of stream-json: how it is launched, whether
// it keeps stdin open for more turns and a control channel (duplex), and
// its permission modes.
type Dialect struct {
	Name string
	// Duplex: NDJSON user lines and control requests on stdin, several
	// turns per process. Otherwise one process per turn, resumed by id.
	Duplex bool
	// Modes are the permission modes the CLI accepts (empty: no live modes).
	Modes []string
	// DefaultMode is the mode a session starts in when the CLI does not say.
	DefaultMode string
	// SessionID: the CLI takes a session id chosen by tai (--session-id).
	SessionID bool
	// ChildID: the session id is the agent's own, announced once it has
	// started (not chosen by tai).
	ChildID bool
	// format makes the dialect's decoder for a session's decoder d, with
	// the dialect's own state; nil is Claude Code's format.
	format func(d *decoder) lineDecoder
}

var dialects = []Dialect{
	{Name: DialectClaude, Duplex: true, SessionID: true, DefaultMode: "default",
		Modes: []string{"default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"}},
	{Name: DialectQwen, Duplex: true, SessionID: true, DefaultMode: "default",
		Modes: []string{"default", "plan", "auto-edit", "auto", "yolo"}},
	{Name: DialectGemini, format: func(d *decoder) lineDecoder { return geminiDecoder{d} }},
	{Name: DialectCodex, format: func(d *decoder) lineDecoder { return &codexDecoder{decoder: d, itemText: map[string]string{}} }},
	{Name: DialectOpenCode, format: func(d *decoder) lineDecoder { return &openCodeDecoder{decoder: d} }},
	{Name: DialectCursor},
	{Name: DialectAmp},
	{Name: DialectTai, Duplex: true, ChildID: true, format: func(d *decoder) lineDecoder { return &taiDecoder{claudeDecoder: newClaude(d).(*claudeDecoder)} }},
}

// Features are what the driver does, for the capability manifest.
var Features = []string{
	"initialize", "can_use_tool", "control_cancel_request", "interrupt", "set_permission_mode", "set_model",
	"session_id", "resume", "multi_turn", "permission_denials", "usage", "one_shot_resume",
	"hook_callback", "pre_tool_use_veto", "stop_hook", "files_written",
}

// Dialects lists the dialect names this driver speaks.
func Dialects() []string {
	var out []string
	for _, d := range dialects {
		out = append(out, d.Name)
	}
	return out
}

// LookupDialect finds a dialect by name.
func LookupDialect(name string) (Dialect, bool) {
	for _, d := range dialects {
		if d.Name == name {
			return d, true
		}
	}
	return Dialect{}, false
}

// DialectFor picks the dialect of an agent: by its preset name, else by
// the command's name (the package name after npx or node).
func DialectFor(agent string, argv []string) (Dialect, error) {
	cands := []string{agent}
	if len(argv) > 0 {
		cands = append(cands, base(argv[0]))
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				cands = append(cands, base(a))
				break
			}
		}
	}
	for _, c := range cands {
		switch {
		case c == "cursor-agent", c == "cursor":
			c = DialectCursor
		case c == "claude-code", strings.HasSuffix(c, "claude"):
			c = DialectClaude
		case strings.HasSuffix(c, "qwen-code"):
			c = DialectQwen
		case c == "gemini-cli":
			c = DialectGemini
		case c == "opencode-ai":
			c = DialectOpenCode
		}
		if d, ok := LookupDialect(c); ok && d.Name == DialectTai && !isCapSpeak(argv) {
			continue // tai as an agent only with --cap-speak
		}
		if d, ok := LookupDialect(c); ok {
			return d, nil
		}
	}
	return Dialect{}, fmt.Errorf("%w: no stream-json dialect for agent %q (dialects: %s)", driver.ErrUnsupported, agent, strings.Join(Dialects(), ", "))
}

// launchArgs completes a duplex CLI's command line: the stream-json
// formats if the preset left them out, the permission prompt over stdio,
// and the session to create or resume.
func (d Dialect) launchArgs(argv []string, sessionID, resumeID string) []string {
	out := slices.Clone(argv)
	has := func(flag string) bool {
		for _, a := range out {
			if a == flag || strings.HasPrefix(a, flag+"=") {
				return true
			}
		}
		return false
	}
	if d.Name == DialectTai {
		if resumeID != "" {
			out = append(out, "--resume", resumeID)
		}
		return out
	}
	if !has("--input-format") {
		out = append(out, "--input-format", "stream-json")
	}
	if !has("--output-format") {
		out = append(out, "--output-format", "stream-json")
	}
	if d.Name == DialectClaude {
		if !has("--verbose") {
			out = append(out, "--verbose")
		}
		if !has("--permission-prompt-tool") {
			out = append(out, "--permission-prompt-tool", "stdio")
		}
	}
	switch {
	case resumeID != "":
		out = append(out, "--resume", resumeID)
	case sessionID != "" && d.SessionID:
		out = append(out, "--session-id", sessionID)
	}
	return out
}

// turnArgs is a one-shot CLI's command line for one turn, and the stdin
// it reads the prompt from (nil: the prompt is an argument).
func (d Dialect) turnArgs(argv []string, prompt, resumeID string) ([]string, []byte) {
	out := slices.Clone(argv)
	arg := prompt
	if strings.HasPrefix(arg, "-") {
		arg = " " + arg // not a flag
	}
	switch d.Name {
	case DialectGemini:
		if resumeID != "" {
			out = append(out, "--resume", resumeID)
		}
		return append(out, "-p", arg), nil
	case DialectCodex:
		if resumeID != "" {
			out = append(out, "resume", resumeID)
		}
		return append(out, arg), nil
	case DialectOpenCode:
		if resumeID != "" {
			out = append(out, "-s", resumeID)
		}
		return append(out, arg), nil
	case DialectCursor:
		if resumeID != "" {
			out = append(out, "--resume", resumeID)
		}
		return append(out, arg), nil
	case DialectAmp:
		if resumeID != "" && len(out) > 0 {
			out = append([]string{out[0], "threads", "continue", resumeID}, out[1:]...)
		}
		return out, []byte(prompt)
	}
	return append(out, arg), nil
}

// isCapSpeak: the command runs tai as an agent.
func isCapSpeak(argv []string) bool {
	for _, a := range argv {
		if a == "--cap-speak" || strings.HasPrefix(a, "--cap-speak=") || a == "--input-format=stream-json" {
			return true
		}
	}
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "--input-format" && argv[i+1] == "stream-json" {
			return true
		}
	}
	return false
}
