package builtin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tai-dev/tai/internal/readlimit"
)

// Script is what the built-in agent plays for every non-slash prompt.
//
// A script file is YAML (JSON is accepted too, as a YAML subset). Its top
// level is either a list of steps, or a mapping:
//
//	name: demo                 # optional, for logs
//	early_updates: true        # send available_commands_update before the session/new response too
//	auth_methods:              # non-empty: session/new etc. fail with -32000 until authenticate
//	  - {id: token, name: Token, description: "..."}
//	commands:                  # initial available commands (default: echo, plan, help)
//	  - {name: echo, description: Echo text back, hint: text to echo}
//	steps:
//	  - text: "Hello"
//	    chunks: 3
//	  - write: {path: hello.txt, content: "hi\n"}
//
// Each step is a mapping with exactly one kind key (see Step).
type Script struct {
	Name         string
	EarlyUpdates bool
	AuthMethods  []AuthMethod
	// Commands is the initial available command list; nil means the default
	// (echo, plan, help).
	Commands []Command
	// StartMode is the mode sessions start in ("" = default).
	StartMode string
	Steps     []Step
}

// AuthMethod is an authentication method the script advertises in initialize.
type AuthMethod struct {
	ID          string `yaml:"id"`
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// Command is one available (slash) command.
type Command struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Hint        string `yaml:"hint"` // input hint; empty = the command takes no input
}

// Step is one script step. Exactly one field is set; Kind reports which.
// The YAML key for each field is given in its comment.
type Step struct {
	Text       *TextStep       // text: "..." (+ chunks: N) → agent_message_chunk(s)
	Thought    *TextStep       // thought: "..." (+ chunks: N) → agent_thought_chunk(s)
	Plan       *PlanStep       // plan: [{content, priority, status}] → plan (replaces the plan)
	PlanStatus *PlanStatusStep // plan_status: {entry, status} → plan with one entry's status changed
	Read       *ReadStep       // read: {path, line?, limit?} → read tool call via fs/read_text_file
	Write      *WriteStep      // write: {path, content, ask?} → edit tool call via permission + fs/write_text_file
	Run        *RunStep        // run: {command, args?, cwd?, env?, output_limit?, ask?} → execute tool call via terminal/*
	Permission *PermissionStep // permission: {title, kind?} → bare session/request_permission
	SwitchMode *SwitchModeStep // switch_mode: {to} → switch_mode tool call + permission + current_mode_update
	Commands   *CommandsStep   // commands: [{name, description, hint?}] → available_commands_update
	Delay      *DelayStep      // delay: 1.5 → sleep that many seconds (cancellable)
	Usage      *UsageStep      // usage: {used, size, cost?, currency?} → usage_update
	Info       *InfoStep       // info: {title} → session_info_update
	Stop       *StopStep       // stop: max_tokens → the turn's stop reason
	ElicitForm *ElicitFormStep // elicit_form: {message, schema: {properties, required}} → elicitation/create (form)
	ElicitURL  *ElicitURLStep  // elicit_url: {message, url, complete?} → elicitation/create (url) [+ elicitation/complete]

	// Fault injection.
	Crash       *CrashStep       // crash: {code, stderr?} → Serve returns *CrashError (the process should exit with code)
	Hang        *HangStep        // hang: true → block until the connection ends, ignoring session/cancel
	Garbage     *GarbageStep     // garbage: "text" → a raw non-JSON line on stdout
	Big         *BigStep         // big: {bytes} → one agent_message_chunk of that many text bytes, streamed
	LateUpdates *LateUpdatesStep // late_updates: N → N agent_message_chunks after the session/prompt response
	Outside     *OutsideStep     // outside: {path} → fs/read_text_file outside the workspace; expects a refusal
	Flood       *FloodStep       // flood: {count} → count mixed updates as fast as possible

	// late_permission: {title, kind?, cue?} → session/request_permission
	// after the response, when no turn runs (an eager or hostile agent).
	LatePermission *LatePermissionStep
	// Extension: {update: {...}} → that session/update verbatim (a kind
	// newer than the client, say); {method, params} → that request to the
	// client, its answer said as text. For proxies' pass-through tests.
	Extension *ExtensionStep
	// spend_after_cancel: {used, size} → wait for session/cancel, then send
	// this usage_update anyway and hang like hang: (an agent that goes on
	// spending after it was told to stop)
	SpendAfterCancel *UsageStep
	// limit: {message?, resets_at?, times?, error_kind?, exit?, forget?} →
	// the prompt fails the way claude-agent-acp fails a turn at a usage
	// limit (exit: then the agent exits)
	Limit *LimitStep
}

// TextStep streams Text as Chunks chunks (default 1).
type TextStep struct {
	Text   string
	Chunks int
}

// PlanStep replaces the session's plan.
type PlanStep struct{ Entries []PlanEntry }

// PlanEntry is one plan entry. Priority defaults to medium, Status to pending.
type PlanEntry struct {
	Content  string `yaml:"content"`
	Priority string `yaml:"priority"`
	Status   string `yaml:"status"`
}

// PlanStatusStep sets the status of plan entry Entry (0-based) and resends the plan.
type PlanStatusStep struct {
	Entry  int    `yaml:"entry"`
	Status string `yaml:"status"`
}

// ReadStep reads Path (relative to the session cwd unless absolute) through
// the client's fs/read_text_file, without asking first.
type ReadStep struct {
	Path  string `yaml:"path"`
	Line  int    `yaml:"line"`
	Limit int    `yaml:"limit"`
	// Repeat > 1 sends that many reads of the file at once, pipelined, and
	// reports only their total size: a client's memory under pipelined
	// reads is what it exercises.
	Repeat int `yaml:"repeat"`
}

// WriteStep writes Content to Path through fs/write_text_file, after asking
// permission unless Ask is false (or the session is in accept-edits mode).
// It reads Path first (without asking) to show a diff.
type WriteStep struct {
	Path    string `yaml:"path"`
	Content string `yaml:"content"`
	Ask     *bool  `yaml:"ask"` // nil = true
}

// RunStep runs Command through the client's terminal/* service, without
// asking first unless Ask is true.
type RunStep struct {
	Ask         bool              `yaml:"ask"` // ask permission (kind execute) first; a rejection skips the command
	Command     string            `yaml:"command"`
	Args        []string          `yaml:"args"`
	Cwd         string            `yaml:"cwd"`          // default: session cwd; relative = under it
	Env         map[string]string `yaml:"env"`          // extra environment
	OutputLimit int               `yaml:"output_limit"` // outputByteLimit; default 64 KiB
}

// PermissionStep asks for permission for a tool call that has no effect.
type PermissionStep struct {
	Title string `yaml:"title"`
	Kind  string `yaml:"kind"` // ToolKind, default "other"
	// Command and Path describe what the request is about (rawInput.command
	// and a location), so policies that match commands and paths can be
	// exercised without the agent doing anything.
	Command string `yaml:"command"`
	Path    string `yaml:"path"`
}

// SwitchModeStep proposes switching the session to mode To.
type SwitchModeStep struct {
	To string `yaml:"to"`
}

// CommandsStep replaces the available commands.
type CommandsStep struct{ Commands []Command }

// DelayStep sleeps Seconds (through Options.Sleep).
type DelayStep struct{ Seconds float64 }

// UsageStep sends a usage_update. Cost is omitted when zero and Currency is empty.
type UsageStep struct {
	Used     int64   `yaml:"used"`
	Size     int64   `yaml:"size"`
	Cost     float64 `yaml:"cost"`
	Currency string  `yaml:"currency"` // default USD when Cost is set
}

// InfoStep sends a session_info_update and sets the session title.
type InfoStep struct {
	Title string `yaml:"title"`
}

// StopStep sets the stop reason the prompt returns (the script still runs on).
type StopStep struct{ Reason string }

// CrashStep makes Serve stop at once, without answering the prompt, and
// return a *CrashError with Code after writing Stderr to Options.Stderr.
type CrashStep struct {
	Code   int    `yaml:"code"`
	Stderr string `yaml:"stderr"`
}

// LimitStep fails the prompt as an agent at its usage limit does:
// claude-agent-acp 0.101.0 answers session/prompt with a JSON-RPC
// internal error (-32603) whose data is {errorKind: "rate_limit"} and
// whose message is the CLI's text ("You've hit your limit · resets 3pm").
// Times > 0 fails only the session's first Times prompts that reach the
// step (the limit then clears); 0 fails every one.
type LimitStep struct {
	Message  string `yaml:"message"`   // default: "You've hit your limit" [+ " · resets RESETS_AT"]
	ResetsAt string `yaml:"resets_at"` // RFC3339, put in the message
	Times    int    `yaml:"times"`
	// ErrorKind is the error data's errorKind (default rate_limit); "none"
	// sends no data: an error that does not say it is a limit.
	ErrorKind string `yaml:"error_kind"`
	// Exit: once the limit's answer is out, the agent answers nothing more
	// and exits (code 0), as an agent that died while its run was parked;
	// its session is saved, so a new process can load it. Forget (with
	// exit) deletes the saved session too: a new process cannot load it,
	// and its new sessions go on with the limit's count (the account's).
	Exit   bool `yaml:"exit"`
	Forget bool `yaml:"forget"`
}

// HangStep blocks the turn until the connection ends (or Serve's ctx is done).
type HangStep struct{}

// GarbageStep writes Line (plus a newline) raw to stdout.
type GarbageStep struct{ Line string }

// BigStep sends a single agent_message_chunk whose text is Bytes bytes long.
type BigStep struct {
	Bytes int64 `yaml:"bytes"`
}

// LateUpdatesStep sends Count agent_message_chunks after the prompt response.
type LateUpdatesStep struct{ Count int }

// LatePermissionStep asks for permission (as permission: does) after the
// turn's response, when no turn runs: an eager or hostile agent. With Cue
// (a named pipe, relative to the session cwd) it asks only once a writer
// has opened the pipe, so that a test says when.
type LatePermissionStep struct {
	PermissionStep `yaml:",inline"`
	Cue            string `yaml:"cue"`
}

// OutsideStep asks the client to read Path, which should be outside the
// workspace; a well-behaved client refuses and the refusal is reported.
type OutsideStep struct {
	Path string `yaml:"path"`
}

// FloodStep sends Count mixed updates (message chunks, tool calls, tool call
// updates, plans) without pause. They are not kept in the session history.
// With PermissionEvery > 0 every PermissionEvery-th update is preceded by a
// session/request_permission for the last tool call, answered before the
// flood goes on.
type FloodStep struct {
	Count           int `yaml:"count"`
	PermissionEvery int `yaml:"permission_every"`
}

// ExtensionStep sends what ACP v1 does not define: an update, or a
// request of an extension method.
type ExtensionStep struct {
	Update map[string]any `yaml:"update"`
	Method string         `yaml:"method"`
	Params map[string]any `yaml:"params"`
}

// KindLatePermission is late_permission's name in script files.
const KindLatePermission = "late_permission"

// Step kind names, as used in script files.
const (
	KindText        = "text"
	KindThought     = "thought"
	KindPlan        = "plan"
	KindPlanStatus  = "plan_status"
	KindRead        = "read"
	KindWrite       = "write"
	KindRun         = "run"
	KindPermission  = "permission"
	KindSwitchMode  = "switch_mode"
	KindCommands    = "commands"
	KindDelay       = "delay"
	KindUsage       = "usage"
	KindInfo        = "info"
	KindStop        = "stop"
	KindCrash       = "crash"
	KindHang        = "hang"
	KindGarbage     = "garbage"
	KindBig         = "big"
	KindLateUpdates = "late_updates"
	KindOutside     = "outside"
	KindFlood       = "flood"
	KindElicitForm  = "elicit_form"
	KindElicitURL   = "elicit_url"
	KindExtension   = "extension"
	// KindSpendAfterCancel is the spend_after_cancel step.
	KindSpendAfterCancel = "spend_after_cancel"
	KindLimit            = "limit"
)

// Kind returns the kind name of the step ("" if no field is set; the first
// set field if several are, which Validate rejects).
func (s Step) Kind() string {
	for _, k := range s.kinds() {
		return k
	}
	return ""
}

func (s Step) kinds() []string {
	var ks []string
	add := func(set bool, k string) {
		if set {
			ks = append(ks, k)
		}
	}
	add(s.Text != nil, KindText)
	add(s.Thought != nil, KindThought)
	add(s.Plan != nil, KindPlan)
	add(s.PlanStatus != nil, KindPlanStatus)
	add(s.Read != nil, KindRead)
	add(s.Write != nil, KindWrite)
	add(s.Run != nil, KindRun)
	add(s.Permission != nil, KindPermission)
	add(s.SwitchMode != nil, KindSwitchMode)
	add(s.Commands != nil, KindCommands)
	add(s.Delay != nil, KindDelay)
	add(s.Usage != nil, KindUsage)
	add(s.Info != nil, KindInfo)
	add(s.Stop != nil, KindStop)
	add(s.Crash != nil, KindCrash)
	add(s.Hang != nil, KindHang)
	add(s.Garbage != nil, KindGarbage)
	add(s.Big != nil, KindBig)
	add(s.LateUpdates != nil, KindLateUpdates)
	add(s.LatePermission != nil, KindLatePermission)
	add(s.Outside != nil, KindOutside)
	add(s.Flood != nil, KindFlood)
	add(s.Limit != nil, KindLimit)
	add(s.ElicitForm != nil, KindElicitForm)
	add(s.ElicitURL != nil, KindElicitURL)
	add(s.Extension != nil, KindExtension)
	add(s.SpendAfterCancel != nil, KindSpendAfterCancel)
	return ks
}

var (
	validPriorities = []string{"high", "medium", "low"}
	validStatuses   = []string{"pending", "in_progress", "completed"}
	validStops      = []string{"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
	validToolKinds  = []string{"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)

// maxBigBytes bounds the big step so a typo cannot ask for terabytes.
const maxBigBytes = 1 << 32

// Validate checks the script; errors name the step as steps[i] (0-based).
func (sc *Script) Validate() error {
	var errs []error
	if sc.StartMode != "" && !slices.Contains(modeIDs(), sc.StartMode) {
		errs = append(errs, fmt.Errorf("start_mode: %q is not one of %s", sc.StartMode, strings.Join(modeIDs(), ", ")))
	}
	for i, m := range sc.AuthMethods {
		if m.ID == "" || m.Name == "" {
			errs = append(errs, fmt.Errorf("auth_methods[%d]: id and name are required", i))
		}
	}
	for i, c := range sc.Commands {
		if err := validateCommand(c); err != nil {
			errs = append(errs, fmt.Errorf("commands[%d]: %w", i, err))
		}
	}
	for i, st := range sc.Steps {
		if err := st.validate(); err != nil {
			errs = append(errs, fmt.Errorf("steps[%d] (%s): %w", i, st.Kind(), err))
		}
	}
	return errors.Join(errs...)
}

func validateCommand(c Command) error {
	if c.Name == "" || strings.ContainsAny(c.Name, " \t\n/") {
		return fmt.Errorf("command name %q must be non-empty, without spaces or '/'", c.Name)
	}
	return nil
}

func (s Step) validate() error {
	ks := s.kinds()
	switch {
	case len(ks) == 0:
		return errors.New("no step kind set")
	case len(ks) > 1:
		return fmt.Errorf("several step kinds set: %s", strings.Join(ks, ", "))
	}
	switch {
	case s.Text != nil:
		return validateText(s.Text)
	case s.Thought != nil:
		return validateText(s.Thought)
	case s.Plan != nil:
		for i, e := range s.Plan.Entries {
			if err := validatePlanEntry(e); err != nil {
				return fmt.Errorf("entry %d: %w", i, err)
			}
		}
	case s.PlanStatus != nil:
		if s.PlanStatus.Entry < 0 {
			return fmt.Errorf("entry %d is negative", s.PlanStatus.Entry)
		}
		if !slices.Contains(validStatuses, s.PlanStatus.Status) {
			return fmt.Errorf("status %q is not one of %s", s.PlanStatus.Status, strings.Join(validStatuses, ", "))
		}
	case s.Read != nil:
		if s.Read.Path == "" {
			return errors.New("path is required")
		}
		if s.Read.Line < 0 || s.Read.Limit < 0 {
			return errors.New("line and limit must not be negative")
		}
	case s.Write != nil:
		if s.Write.Path == "" {
			return errors.New("path is required")
		}
	case s.Run != nil:
		if s.Run.Command == "" {
			return errors.New("command is required")
		}
		if s.Run.OutputLimit < 0 {
			return errors.New("output_limit must not be negative")
		}
	case s.Permission != nil:
		if s.Permission.Title == "" {
			return errors.New("title is required")
		}
		if s.Permission.Kind != "" && !slices.Contains(validToolKinds, s.Permission.Kind) {
			return fmt.Errorf("kind %q is not one of %s", s.Permission.Kind, strings.Join(validToolKinds, ", "))
		}
	case s.SwitchMode != nil:
		if !slices.ContainsFunc(sessionModes, func(m modeInfo) bool { return m.id == s.SwitchMode.To }) {
			return fmt.Errorf("mode %q is not one of %s", s.SwitchMode.To, strings.Join(modeIDs(), ", "))
		}
	case s.Commands != nil:
		for i, c := range s.Commands.Commands {
			if err := validateCommand(c); err != nil {
				return fmt.Errorf("command %d: %w", i, err)
			}
		}
	case s.Delay != nil:
		if s.Delay.Seconds < 0 || s.Delay.Seconds > 24*3600 {
			return fmt.Errorf("delay %v s is out of range [0, 86400]", s.Delay.Seconds)
		}
	case s.Usage != nil:
		if s.Usage.Used < 0 || s.Usage.Size < 0 {
			return errors.New("used and size must not be negative")
		}
	case s.SpendAfterCancel != nil:
		if s.SpendAfterCancel.Used < 0 || s.SpendAfterCancel.Size < 0 {
			return errors.New("used and size must not be negative")
		}
	case s.Info != nil:
		if s.Info.Title == "" {
			return errors.New("title is required")
		}
	case s.Stop != nil:
		if !slices.Contains(validStops, s.Stop.Reason) {
			return fmt.Errorf("stop reason %q is not one of %s", s.Stop.Reason, strings.Join(validStops, ", "))
		}
	case s.Crash != nil:
		if s.Crash.Code < 0 || s.Crash.Code > 255 {
			return fmt.Errorf("exit code %d is out of range [0, 255]", s.Crash.Code)
		}
	case s.Limit != nil:
		if s.Limit.Times < 0 {
			return errors.New("times must not be negative")
		}
		if s.Limit.Forget && !s.Limit.Exit {
			return errors.New("forget needs exit: true")
		}
		if s.Limit.ResetsAt != "" {
			if _, err := time.Parse(time.RFC3339, s.Limit.ResetsAt); err != nil {
				return fmt.Errorf("resets_at: %w", err)
			}
		}
	case s.Garbage != nil:
		if strings.ContainsAny(s.Garbage.Line, "\r\n") {
			return errors.New("garbage must be a single line")
		}
	case s.Big != nil:
		if s.Big.Bytes < 0 || s.Big.Bytes > maxBigBytes {
			return fmt.Errorf("bytes %d is out of range [0, %d]", s.Big.Bytes, int64(maxBigBytes))
		}
	case s.LateUpdates != nil:
		if s.LateUpdates.Count < 0 {
			return errors.New("count must not be negative")
		}
	case s.LatePermission != nil:
		if s.LatePermission.Title == "" {
			return errors.New("title is required")
		}
	case s.Outside != nil:
		if s.Outside.Path == "" {
			return errors.New("path is required")
		}
	case s.Flood != nil:
		if s.Flood.Count < 0 || s.Flood.PermissionEvery < 0 {
			return errors.New("count and permission_every must not be negative")
		}
	case s.ElicitForm != nil:
		return s.ElicitForm.validate()
	case s.ElicitURL != nil:
		return s.ElicitURL.validate()
	case s.Extension != nil:
		if (s.Extension.Update == nil) == (s.Extension.Method == "") {
			return errors.New("extension wants update or method, one of them")
		}
		if u := s.Extension.Update; u != nil {
			if k, _ := u["sessionUpdate"].(string); k == "" {
				return errors.New("extension update needs a sessionUpdate kind")
			}
		}
	}
	return nil
}

func validateText(t *TextStep) error {
	if t.Chunks < 0 {
		return fmt.Errorf("chunks %d is negative", t.Chunks)
	}
	return nil
}

func validatePlanEntry(e PlanEntry) error {
	if e.Content == "" {
		return errors.New("content is required")
	}
	if e.Priority != "" && !slices.Contains(validPriorities, e.Priority) {
		return fmt.Errorf("priority %q is not one of %s", e.Priority, strings.Join(validPriorities, ", "))
	}
	if e.Status != "" && !slices.Contains(validStatuses, e.Status) {
		return fmt.Errorf("status %q is not one of %s", e.Status, strings.Join(validStatuses, ", "))
	}
	return nil
}

// LoadScript reads and validates a YAML or JSON script file. Errors name the
// file and, for a bad step, its index (steps[i], 0-based) and line.
func LoadScript(path string) (*Script, error) {
	data, err := readlimit.ReadFile(path, readlimit.Script)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	sc, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	return sc, nil
}

// ParseScript parses and validates a YAML or JSON script.
func ParseScript(data []byte) (*Script, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty script")
		}
		return nil, fmt.Errorf("parse: %w", err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	sc := &Script{}
	var stepsNode *yaml.Node
	switch root.Kind {
	case yaml.SequenceNode:
		stepsNode = root
	case yaml.MappingNode:
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			var err error
			switch k.Value {
			case "name":
				err = v.Decode(&sc.Name)
			case "early_updates":
				err = v.Decode(&sc.EarlyUpdates)
			case "auth_methods":
				err = decodeStrict(v, &sc.AuthMethods)
			case "commands":
				err = decodeStrict(v, &sc.Commands)
			case "start_mode":
				err = v.Decode(&sc.StartMode)
			case "steps":
				if v.Kind != yaml.SequenceNode {
					err = errors.New("must be a list of steps")
				}
				stepsNode = v
			default:
				err = errors.New("unknown key (want name, early_updates, auth_methods, commands, start_mode, steps)")
			}
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", k.Line, k.Value, err)
			}
		}
	default:
		return nil, fmt.Errorf("line %d: the script must be a list of steps or a mapping with steps", root.Line)
	}
	if stepsNode != nil {
		for i, n := range stepsNode.Content {
			st, err := parseStep(n)
			if err != nil {
				kind := st.Kind()
				if kind == "" {
					kind = "?"
				}
				return nil, fmt.Errorf("steps[%d] (%s, line %d): %w", i, kind, n.Line, err)
			}
			sc.Steps = append(sc.Steps, st)
		}
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// decodeStrict decodes n into v rejecting unknown fields; yaml.Node.Decode
// has no KnownFields switch, so the node goes through a strict Decoder.
func decodeStrict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		// The re-marshalled node's line numbers are meaningless; drop them.
		return errors.New(stripLinePrefix(err.Error()))
	}
	return nil
}

func stripLinePrefix(s string) string {
	s = strings.TrimPrefix(s, "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:\n")
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "line ") {
		if i := strings.Index(s, ": "); i >= 0 {
			s = s[i+2:]
		}
	}
	return s
}

var stepKinds = []string{
	KindText, KindThought, KindPlan, KindPlanStatus, KindRead, KindWrite, KindRun, KindPermission,
	KindSwitchMode, KindCommands, KindDelay, KindUsage, KindInfo, KindStop, KindCrash, KindHang,
	KindGarbage, KindBig, KindLateUpdates, KindLatePermission, KindOutside, KindFlood, KindElicitForm, KindElicitURL, KindSpendAfterCancel, KindExtension, KindLimit,
}

// parseStep decodes one step mapping. The returned Step has its kind set as
// far as it got, so the caller can name the kind in the error.
func parseStep(n *yaml.Node) (Step, error) {
	var st Step
	if n.Kind != yaml.MappingNode {
		return st, fmt.Errorf("a step must be a mapping with one of: %s", strings.Join(stepKinds, ", "))
	}
	var kindKey, kindVal *yaml.Node
	var chunks *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Value == "chunks":
			chunks = v
		case slices.Contains(stepKinds, k.Value):
			if kindKey != nil {
				return st, fmt.Errorf("a step has exactly one kind, got %s and %s", kindKey.Value, k.Value)
			}
			kindKey, kindVal = k, v
		default:
			return st, fmt.Errorf("unknown key %q (step kinds: %s)", k.Value, strings.Join(stepKinds, ", "))
		}
	}
	if kindKey == nil {
		return st, fmt.Errorf("no step kind (one of: %s)", strings.Join(stepKinds, ", "))
	}
	if chunks != nil && kindKey.Value != KindText && kindKey.Value != KindThought {
		return st, errors.New("chunks only applies to text and thought")
	}
	err := decodeStepValue(&st, kindKey.Value, kindVal, chunks)
	return st, err
}

func decodeStepValue(st *Step, kind string, v, chunks *yaml.Node) error {
	scalarString := func(dst *string) error {
		if v.Kind != yaml.ScalarNode {
			return errors.New("want a string")
		}
		*dst = v.Value
		return nil
	}
	switch kind {
	case KindText, KindThought:
		t := &TextStep{}
		if kind == KindText {
			st.Text = t
		} else {
			st.Thought = t
		}
		if err := scalarString(&t.Text); err != nil {
			return err
		}
		if chunks != nil {
			if err := chunks.Decode(&t.Chunks); err != nil {
				return fmt.Errorf("chunks: %w", err)
			}
		}
	case KindPlan:
		st.Plan = &PlanStep{}
		return decodeStrict(v, &st.Plan.Entries)
	case KindPlanStatus:
		st.PlanStatus = &PlanStatusStep{}
		return decodeStrict(v, st.PlanStatus)
	case KindRead:
		st.Read = &ReadStep{}
		if v.Kind == yaml.ScalarNode { // read: notes.txt
			st.Read.Path = v.Value
			return nil
		}
		return decodeStrict(v, st.Read)
	case KindWrite:
		st.Write = &WriteStep{}
		return decodeStrict(v, st.Write)
	case KindRun:
		st.Run = &RunStep{}
		return decodeStrict(v, st.Run)
	case KindPermission:
		st.Permission = &PermissionStep{}
		return decodeStrict(v, st.Permission)
	case KindSwitchMode:
		st.SwitchMode = &SwitchModeStep{}
		if v.Kind == yaml.ScalarNode { // switch_mode: plan
			st.SwitchMode.To = v.Value
			return nil
		}
		return decodeStrict(v, st.SwitchMode)
	case KindCommands:
		st.Commands = &CommandsStep{}
		return decodeStrict(v, &st.Commands.Commands)
	case KindDelay:
		st.Delay = &DelayStep{}
		return decodeStrict(v, &st.Delay.Seconds)
	case KindUsage:
		st.Usage = &UsageStep{}
		return decodeStrict(v, st.Usage)
	case KindInfo:
		st.Info = &InfoStep{}
		if v.Kind == yaml.ScalarNode { // info: "title"
			st.Info.Title = v.Value
			return nil
		}
		return decodeStrict(v, st.Info)
	case KindStop:
		st.Stop = &StopStep{}
		return scalarString(&st.Stop.Reason)
	case KindCrash:
		st.Crash = &CrashStep{}
		if v.Kind == yaml.ScalarNode { // crash: 3
			return decodeStrict(v, &st.Crash.Code)
		}
		return decodeStrict(v, st.Crash)
	case KindHang:
		st.Hang = &HangStep{}
		var b bool
		if err := decodeStrict(v, &b); err != nil {
			return err
		}
		if !b {
			return errors.New("hang must be true")
		}
	case KindGarbage:
		st.Garbage = &GarbageStep{}
		return scalarString(&st.Garbage.Line)
	case KindBig:
		st.Big = &BigStep{}
		if v.Kind == yaml.ScalarNode { // big: 1048576
			return decodeStrict(v, &st.Big.Bytes)
		}
		return decodeStrict(v, st.Big)
	case KindLateUpdates:
		st.LateUpdates = &LateUpdatesStep{}
		return decodeStrict(v, &st.LateUpdates.Count)
	case KindLatePermission:
		st.LatePermission = &LatePermissionStep{}
		return decodeStrict(v, st.LatePermission)
	case KindOutside:
		st.Outside = &OutsideStep{}
		if v.Kind == yaml.ScalarNode {
			st.Outside.Path = v.Value
			return nil
		}
		return decodeStrict(v, st.Outside)
	case KindElicitForm:
		st.ElicitForm = &ElicitFormStep{}
		return decodeStrict(v, st.ElicitForm)
	case KindElicitURL:
		st.ElicitURL = &ElicitURLStep{}
		return decodeStrict(v, st.ElicitURL)
	case KindFlood:
		st.Flood = &FloodStep{}
		if v.Kind == yaml.ScalarNode {
			return decodeStrict(v, &st.Flood.Count)
		}
		return decodeStrict(v, st.Flood)
	case KindSpendAfterCancel:
		st.SpendAfterCancel = &UsageStep{}
		return decodeStrict(v, st.SpendAfterCancel)
	case KindExtension:
		st.Extension = &ExtensionStep{}
		return decodeStrict(v, st.Extension)
	case KindLimit:
		st.Limit = &LimitStep{}
		if v.Kind == yaml.ScalarNode { // limit: "You've hit your limit · resets 3pm"
			st.Limit.Message = v.Value
			return nil
		}
		return decodeStrict(v, st.Limit)
	}
	return nil
}
