// Package render turns a session's events into what a person or a program
// reads on stdout: streamed text with colour on a terminal, or one JSON frame
// per event (--output stream-json).
package render

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/safetext"
)

// ANSI styles. Only used when colour is on.
const (
	reset  = "\x1b[0m"
	bold   = "\x1b[1m"
	dim    = "\x1b[2m"
	italic = "\x1b[3m"
	red    = "\x1b[31m"
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	blue   = "\x1b[34m"
	cyan   = "\x1b[36m"
)

// maxDiffLines bounds a diff shown inline; the file is on disk anyway.
const maxDiffLines = 40

// flushDelay is how long streamed text may wait in the buffer: a reply of
// thousands of small chunks costs a handful of writes, and a reader still
// sees it as it streams.
const flushDelay = 20 * time.Millisecond

// maxTools is how many tool calls' states are kept before the finished
// ones are let go.
const maxTools = 1024

// Text renders events as readable, streamed text. Output is buffered: it is
// written at most flushDelay after it was rendered, at once before anything
// the user must see now (a permission being asked, the turn's end, an
// error), and by Flush.
type Text struct {
	W     io.Writer
	Color bool
	// Clock times the delayed flush; nil is the real clock.
	Clock quartz.Clock
	// Verbose shows what is otherwise left out: a clean agent exit, and
	// automatic allows under QuietAllows.
	Verbose bool
	// QuietAllows hides the policy's automatic allows (--approve all, where
	// every allow is expected), unless Verbose.
	QuietAllows bool
	// Status shows the status line while the agent is silent (W is a
	// terminal: it is never written to a pipe).
	Status bool

	mu        sync.Mutex
	out       *bufio.Writer
	flushing  bool        // a delayed flush is scheduled
	inMessage driver.Role // role of the message being streamed, "" if none
	atBOL     bool        // the cursor is at the start of a line
	// printed is what was shown of the last message id, for a chunk that
	// replaces it: its length and a hash of it, not the text, which the
	// result keeps already. The hash is written to, never rebuilt:
	// per-chunk work must not grow with the message.
	printedID string
	printed   printedText
	tools     map[string]string
	toolsMax  int                // len(tools) that triggers a sweep of finished calls
	shownPlan []driver.PlanEntry // as last shown
	// held is a permission ask not shown yet: the policy's decision comes
	// next, and the two make one line. Anything else shows it first. A
	// human's question is on the terminal meanwhile (the prompter's): the
	// held line must not be written into it.
	held      *driver.PermissionRequest
	status    statusLine
	diffShown map[string]bool // tool call ids whose diff is on screen
	root      string          // the session's workspace: diffs name files relative to it
}

// NewText returns a text renderer.
func NewText(w io.Writer, color bool) *Text {
	return &Text{W: w, Color: color, atBOL: true, tools: map[string]string{}, diffShown: map[string]bool{}}
}

// Flush writes out what is buffered.
func (t *Text) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.showHeld()
	t.clearStatus()
	if t.out == nil {
		return nil
	}
	return t.out.Flush()
}

// writer returns the buffered writer, scheduling a delayed flush of what is
// about to be written.
func (t *Text) writer() *bufio.Writer {
	if t.out == nil {
		t.out = bufio.NewWriterSize(t.W, 32<<10)
		if t.Clock == nil {
			t.Clock = quartz.NewReal()
		}
	}
	if !t.flushing {
		t.flushing = true
		t.Clock.AfterFunc(flushDelay, func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			t.flushing = false
			_ = t.out.Flush()
		}, "render", "flush")
	}
	return t.out
}

// urgent reports events the user must see at once, those a prompt to the
// user can follow (a permission ask, a form, a mode change) among them:
// the flush must not wait, or what was rendered before (the session's
// header) would land on the prompt's input line.
func urgent(typ driver.EventType) bool {
	switch typ {
	case driver.EventPermissionAsked, driver.EventPermissionDecided, driver.EventElicitationAsked, driver.EventModeChanged, driver.EventTurnEnded,
		driver.EventError, driver.EventProcessExited, driver.EventScreenDelta:
		return true
	}
	return false
}

func (t *Text) style(s, text string) string {
	if !t.Color || text == "" {
		return text
	}
	return s + text + reset
}

// endMessage closes a streamed message so the next item starts on its own
// line.
func (t *Text) endMessage() {
	if !t.atBOL {
		fmt.Fprintln(t.writer())
		t.atBOL = true
	}
	t.inMessage = ""
}

func (t *Text) line(format string, args ...any) {
	t.endMessage()
	fmt.Fprintf(t.writer(), format+"\n", args...)
}

// words writes a line of parts separated by spaces, without fmt: the
// lines a flood of tool calls and plans is made of.
func (t *Text) words(parts ...string) {
	t.endMessage()
	w := t.writer()
	for i, p := range parts {
		if i > 0 {
			_ = w.WriteByte(' ')
		}
		_, _ = w.WriteString(p)
	}
	_ = w.WriteByte('\n')
}

// Emit renders one event.
func (t *Text) Emit(ev driver.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	safe := SafeEvent(ev) // the status line shows the agent's strings too
	t.statusEvent(safe)
	t.emit(safe)
	if urgent(ev.Type) && t.out != nil {
		_ = t.out.Flush()
	}
}

// agentWho names the agent in the session header: "claude (Claude Code
// 1.2)", the parts it did not report left out (a TUI reports no version),
// and no parenthesis that only says the agent's name again.
func agentWho(s *driver.SessionStarted) string {
	inner := strings.TrimSpace(s.AgentName + " " + s.AgentVersion)
	if inner == "" || inner == s.Agent {
		return s.Agent
	}
	return fmt.Sprintf("%s (%s)", s.Agent, inner)
}

func (t *Text) emit(ev driver.Event) {
	if ev.Type != driver.EventPermissionDecided {
		t.showHeld()
	}
	switch ev.Type {
	case driver.EventSessionStarted:
		s := ev.Started
		t.root = s.Cwd
		who := agentWho(s)
		verb := "session"
		if s.Resumed {
			verb = "resumed session"
		}
		t.line("%s", t.style(dim, fmt.Sprintf("● %s %s · %s · %s", who, verb, ev.Session, s.Cwd)))
		if s.CurrentMode != "" {
			t.line("%s", t.style(dim, "  mode: "+s.CurrentMode+modeList(s.Modes)))
		}
	case driver.EventMessage:
		t.message(ev.Message)
	case driver.EventToolCall:
		t.toolCall(ev.ToolCall)
	case driver.EventPlan:
		t.plan(ev.Plan)
	case driver.EventPermissionAsked:
		// Shown with its decision: most are the policy's, one line each.
		// A human's question is on the terminal meanwhile (the prompter's).
		p := *ev.Permission
		t.held = &p
		t.endMessage() // a question that follows starts on its own line
	case driver.EventPermissionDecided:
		t.decided(ev.Decision)
	case driver.EventElicitationAsked:
		e := ev.Elicitation
		what := fmt.Sprintf("%d field(s)", len(e.Fields))
		if e.Mode == driver.ElicitURL {
			what = e.URL
		}
		t.line("%s %s %s", t.style(yellow+bold, "? elicitation ("+string(e.Mode)+"):"), e.Message, t.style(dim, what))
	case driver.EventElicitationAnswered:
		a := ev.ElicitationAnswer
		col := green
		if a.Action != driver.ElicitAccept {
			col = red
		}
		t.line("  %s %s", t.style(col+bold, "→ "+string(a.Action)), t.style(dim, fmt.Sprintf("(by %s: %s)", a.DecidedBy, a.Reason)))
	case driver.EventElicitationCompleted:
		t.line("%s", t.style(dim, "◆ elicitation "+ev.ElicitationComplete.ElicitationID+" completed"))
	case driver.EventModeChanged:
		t.line("%s", t.style(cyan, "◆ mode → "+ev.Mode.ID))
	case driver.EventCommands:
		names := make([]string, 0, len(ev.Commands))
		for _, c := range ev.Commands {
			names = append(names, "/"+c.Name)
		}
		t.line("%s", t.style(dim, "◆ commands: "+strings.Join(names, " ")))
	case driver.EventConfigOptions:
		var parts []string
		for _, o := range ev.Config {
			v := strings.Trim(string(o.CurrentValue), `"`)
			parts = append(parts, o.ID+"="+v)
		}
		t.line("%s", t.style(dim, "◆ config: "+strings.Join(parts, " ")))
	case driver.EventSessionInfo:
		if ev.Info.Title != nil {
			t.line("%s", t.style(dim, "◆ title: "+*ev.Info.Title))
		}
	case driver.EventUsage:
		u := ev.Usage
		s := fmt.Sprintf("◆ context %d/%d tokens", u.ContextUsed, u.ContextSize)
		if u.CostAmount > 0 {
			s += fmt.Sprintf(" · cost %.4f %s", u.CostAmount, u.Currency)
		}
		t.line("%s", t.style(dim, s))
	case driver.EventStatus:
		t.line("%s", t.style(dim, "◆ "+ev.Status.State))
	case driver.EventScreenDelta:
		t.endMessage()
		for _, l := range ev.Screen.Lines {
			fmt.Fprintln(t.writer(), l)
		}
	case driver.EventFileWritten:
		f := ev.File
		verb := "wrote"
		if f.Created {
			verb = "created"
		}
		t.line("  %s", t.style(green, fmt.Sprintf("✎ %s %s (%d bytes)", verb, f.Path, f.Size)))
	case driver.EventTerminalExited:
		x := ev.Terminal
		st := "exit ?"
		if x.ExitCode != nil {
			st = fmt.Sprintf("exit %d", *x.ExitCode)
		}
		if x.Signal != "" {
			st = x.Signal
		}
		t.line("  %s", t.style(dim, fmt.Sprintf("$ %s → %s (%d ms)", ShellLine(x.Command, x.Args), st, x.DurationMS)))
	case driver.EventTurnEnded:
		t.line("%s", t.style(dim, "■ turn ended: "+ev.Turn.StopReason))
	case driver.EventError:
		t.line("%s %s", t.style(red+bold, "✗ "+ev.Error.Code+":"), ev.Error.Message)
	case driver.EventProcessExited:
		p := ev.Process
		st := "?"
		if p.ExitCode != nil {
			st = fmt.Sprint(*p.ExitCode)
		}
		if p.Signal != "" {
			st = p.Signal
		}
		if st == "0" && !t.Verbose {
			return // a clean exit is how every run ends
		}
		t.line("%s", t.style(dim, fmt.Sprintf("◆ agent process %d exited (%s)", p.Pid, st)))
	case driver.EventRaw:
		if msg, ok := rawLine(ev.Raw); ok {
			if msg != "" { // a summary's chunks are not shown one by one
				t.line("%s", t.style(dim, msg))
			}
			return
		}
		t.line("%s", t.style(dim, "◆ (unknown update "+safetext.Line(string(ev.Raw.Kind))+")"))
	}
}

// rawLine is how an update the ACP driver passes on raw is shown, for the
// kinds tai advertises (notices, compaction); ok is false for the rest.
// Its strings come from the agent: escaped here, as SafeEvent does not
// look inside raw JSON.
func rawLine(r *driver.RawUpdate) (string, bool) {
	switch r.Kind {
	case "notice":
		var n struct {
			Severity    string  `json:"severity"`
			Title       string  `json:"title"`
			Description *string `json:"description"`
		}
		if json.Unmarshal(r.Data, &n) != nil || n.Title == "" {
			return "", false
		}
		msg := "◆ " + safetext.Line(cmp.Or(n.Severity, "info")) + ": " + safetext.Line(n.Title)
		if n.Description != nil && *n.Description != "" {
			msg += " — " + safetext.Line(*n.Description)
		}
		return msg, true
	case "compaction_update":
		var c struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		if json.Unmarshal(r.Data, &c) != nil {
			return "", false
		}
		switch c.Status {
		case "in_progress":
			return "◆ compacting the context…", true
		case "completed":
			return "◆ context compacted", true
		case "failed":
			return "◆ context compaction failed: " + safetext.Line(c.Error), true
		case "cancelled":
			return "◆ context compaction cancelled", true
		}
		return "◆ context compaction " + safetext.Line(c.Status), true
	case "compaction_summary_chunk":
		return "", true
	}
	return "", false
}

func modeList(modes []driver.ModeInfo) string {
	if len(modes) == 0 {
		return ""
	}
	ids := make([]string, len(modes))
	for i, m := range modes {
		ids[i] = m.ID
	}
	return " (available: " + strings.Join(ids, ", ") + ")"
}

func (t *Text) message(m *driver.MessageChunk) {
	if t.inMessage != m.Role {
		t.endMessage()
		t.inMessage = m.Role
		switch m.Role {
		case driver.RoleThought:
			fmt.Fprint(t.writer(), t.style(dim+italic, "thinking: "))
		case driver.RoleUser:
			fmt.Fprint(t.writer(), t.style(blue+bold, "you: "))
		}
	}
	text := m.Text
	if m.MessageID != t.printedID {
		t.printedID = m.MessageID
		t.printed.reset()
	}
	if m.Replace {
		// A terminal cannot take back what it showed: show what is new,
		// or the whole message again if it changed.
		if t.printed.prefixOf(text) {
			text = text[t.printed.n:]
		} else {
			t.endMessage()
			t.inMessage = m.Role
		}
		t.printed.reset()
	}
	t.printed.add(m.Text)
	if text == "" && len(m.Content) > 0 {
		text = "[" + blockType(m.Content) + "]"
	}
	if text == "" {
		return
	}
	bol := strings.HasSuffix(text, "\n")
	if m.Role == driver.RoleThought {
		text = t.style(dim+italic, text)
	}
	_, _ = t.writer().WriteString(text)
	t.atBOL = bol
}

// printedText stands for text shown: its length and its hash, with a seed
// of this process's, so no agent can make two texts hash alike on
// purpose, and by chance only once in 2^64.
type printedText struct {
	n int
	h maphash.Hash
}

func (p *printedText) add(s string) {
	p.n += len(s)
	_, _ = p.h.WriteString(s)
}

func (p *printedText) reset() {
	p.n = 0
	p.h.Reset()
}

// prefixOf reports whether s begins with the text shown.
func (p *printedText) prefixOf(s string) bool {
	return len(s) >= p.n && maphash.String(p.h.Seed(), s[:p.n]) == p.h.Sum64()
}

func blockType(raw json.RawMessage) string {
	var b struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(raw, &b)
	if b.Type == "" {
		return "content"
	}
	return b.Type
}

// decided shows a permission's decision. The policy's (a rule, the
// mode's default, an earlier "always") is one dim line, and its allows
// are left out under QuietAllows; another's (a human, an answerer, a
// cancel) shows the call asked, its command, and the verdict.
func (t *Text) decided(d *driver.PermissionDecision) {
	if t.held != nil && d.RequestID != "" && d.RequestID != t.held.ID {
		t.showHeld() // another ask's
	}
	opt := cmp.Or(d.OptionID, d.Outcome)
	if t.held == nil {
		// Its ask is shown already: a human was asked meanwhile.
		col := green
		if d.Verdict != driver.VerdictAllow {
			col = red
		}
		t.line("  %s %s", t.style(col+bold, "→ "+d.Verdict), t.style(dim, fmt.Sprintf("(%s; by %s: %s)", opt, d.DecidedBy, d.Reason)))
		return
	}
	req := *t.held
	if !automatic(d.DecidedBy) {
		t.showHeld()
		t.decided(d)
		return
	}
	t.held = nil
	if d.Verdict == driver.VerdictAllow && t.QuietAllows && !t.Verbose {
		return
	}
	word, col := "allowed", dim
	switch d.Verdict {
	case driver.VerdictDeny:
		word, col = "denied", red
	case driver.VerdictCancelled:
		word, col = "cancelled", red
	}
	if req.Unrequested {
		word = "unasked call " + word
	}
	t.line("  %s %s", t.style(col, "· "+word+":"), t.style(dim, fmt.Sprintf("%s (by %s: %s)", describeCall(req.ToolCall), d.DecidedBy, d.Reason)))
	if c, ok := ShownCommand(req.ToolCall); ok && d.Verdict != driver.VerdictAllow {
		t.line("    %s", t.style(dim, "$ "+strings.ReplaceAll(c, "\n", "\n      "))) // what was refused, as it would have run
	}
}

// showHeld shows the permission ask held for its decision: the call and
// what would run.
func (t *Text) showHeld() {
	if t.held == nil {
		return
	}
	req := *t.held
	t.held = nil
	label := "? permission:"
	if req.Unrequested {
		label = "? unasked call:" // the agent did not ask; tai decides before serving it
	}
	t.line("%s %s", t.style(yellow+bold, label), describeCall(req.ToolCall))
	// What would run, as it would run, whatever the title says.
	if c, ok := ShownCommand(req.ToolCall); ok {
		t.line("    %s", t.style(bold, "$ "+strings.ReplaceAll(c, "\n", "\n      ")))
	} else if req.ToolCall.Kind == driver.KindExecute {
		t.line("    %s", t.style(bold, "(command not given by the agent)"))
	}
}

// automatic reports a decision the policy made, nobody asked: a rule, the
// mode's default, an earlier "always" answer.
func automatic(by driver.Provenance) bool {
	return by == driver.ByDefault || by == driver.ByRemembered || strings.HasPrefix(string(by), "rule:")
}

func describeCall(tc driver.ToolCall) string {
	var b strings.Builder
	writeCall(&b, &tc)
	return b.String()
}

// writeCall writes a call's description: kind, title (or id), locations.
func writeCall(w io.StringWriter, tc *driver.ToolCall) {
	if tc.Kind != "" {
		_, _ = w.WriteString("[")
		_, _ = w.WriteString(string(tc.Kind))
		_, _ = w.WriteString("] ")
	}
	if tc.Title != "" {
		_, _ = w.WriteString(tc.Title)
	} else {
		_, _ = w.WriteString(tc.ID)
	}
	for _, l := range tc.Locations {
		if l.Line == 0 && strings.Contains(tc.Title, l.Path) {
			continue // the title names it already
		}
		_, _ = w.WriteString(" ")
		_, _ = w.WriteString(l.Path)
		if l.Line > 0 {
			_, _ = w.WriteString(":" + strconv.Itoa(l.Line))
		}
	}
}

func (t *Text) toolCall(tc *driver.ToolCall) {
	prev, seen := t.tools[tc.ID]
	state := tc.Status
	if seen && prev == state {
		return // a content-only patch; shown when the status moves
	}
	if t.toolsMax == 0 {
		t.toolsMax = maxTools
	}
	if !seen && len(t.tools) >= t.toolsMax {
		// A long session: let go of the calls that are over.
		for id, st := range t.tools {
			if st == "completed" || st == "failed" {
				delete(t.tools, id)
			}
		}
		if len(t.tools) > t.toolsMax/2 { // mostly running: grow, so the sweeps stay rare
			t.toolsMax *= 2
		}
	}
	t.tools[tc.ID] = state
	col := yellow
	mark := "⏺"
	switch state {
	case "completed":
		col, mark = green, "✓"
	case "failed":
		col, mark = red, "✗"
	case "in_progress":
		mark = "…"
	}
	if !seen {
		t.endMessage()
		w := t.writer()
		_, _ = w.WriteString(t.style(col, mark))
		_ = w.WriteByte(' ')
		writeCall(w, tc)
		_ = w.WriteByte(' ')
		_, _ = w.WriteString(t.style(dim, statusWord(state)))
		_ = w.WriteByte('\n')
	} else {
		t.words(t.style(col, mark), t.style(dim, tc.Title), t.style(dim, statusWord(state)))
	}
	if state != "completed" && state != "failed" {
		if !seen {
			t.contents(tc, true)
		}
		return
	}
	t.contents(tc, false)
}

// statusWord is a tool call's status as a person reads it.
func statusWord(s string) string {
	switch s {
	case "pending":
		return "waiting"
	case "in_progress":
		return "running"
	case "completed":
		return "done"
	}
	return s
}

// ShownDiff reports whether the diff of tool call id was shown, so that a
// permission question on the same screen need not repeat it.
func (t *Text) ShownDiff(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.diffShown[safetext.Line(id)] // kept as shown, under its safe id
}

// contents shows diffs when a call is first seen (what is about to change)
// and text output when it finishes.
func (t *Text) contents(tc *driver.ToolCall, diffs bool) {
	for _, c := range tc.Content {
		switch {
		case c.Type == "diff" && diffs:
			t.diff(c)
			t.diffShown[tc.ID] = true
		case c.Type == "text" && !diffs:
			for i, l := range strings.Split(strings.TrimRight(c.Text, "\n"), "\n") {
				if i == 8 {
					fmt.Fprintln(t.writer(), t.style(dim, "    …"))
					break
				}
				fmt.Fprintln(t.writer(), t.style(dim, "    "+l))
			}
		case c.Type == "terminal" && !diffs:
			fmt.Fprintln(t.writer(), t.style(dim, "    [terminal "+c.TerminalID+"]"))
		}
	}
}

func (t *Text) plan(p *driver.Plan) {
	box := func(e driver.PlanEntry) string {
		switch e.Status {
		case "in_progress":
			return "[~]"
		case "completed":
			return "[x]"
		}
		return "[ ]"
	}
	// The same entries with some statuses moved: show just the moves, so a
	// long plan does not scroll the conversation away.
	if len(t.shownPlan) == len(p.Entries) && len(p.Entries) > 0 {
		same := true
		var moved []driver.PlanEntry
		for i, e := range p.Entries {
			if e.Content != t.shownPlan[i].Content {
				same = false
				break
			}
			if e.Status != t.shownPlan[i].Status {
				moved = append(moved, e)
			}
		}
		if same {
			for _, e := range moved {
				t.line("%s", t.style(cyan, "◆ plan "+box(e)+" "+e.Content))
			}
			t.shownPlan = append(t.shownPlan[:0], p.Entries...)
			return
		}
	}
	t.shownPlan = append(t.shownPlan[:0], p.Entries...)
	t.words(t.style(cyan, "◆ plan"))
	w := t.writer()
	for _, e := range p.Entries {
		_, _ = w.WriteString("    ")
		_, _ = w.WriteString(box(e))
		_ = w.WriteByte(' ')
		_, _ = w.WriteString(e.Content)
		_ = w.WriteByte('\n')
	}
}
