package render

import (
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/safetext"
)

// Every string in an event may come from the agent. The text renderer
// shows SafeEvent(ev), never ev: one place, so that a new line shown cannot
// forget to escape what a terminal would act on (safetext). Frames (JSON)
// need no such care: the encoder escapes controls.

// SafeEvent returns ev with every string a person is shown made safe for a
// terminal: one line each, but for message text, tool output and diffs,
// which keep their newlines. ev itself is not changed.
func SafeEvent(ev driver.Event) driver.Event {
	l := safetext.Line
	ev.Session = l(ev.Session)
	if s := ev.Started; s != nil {
		c := *s
		c.Agent, c.AgentName, c.AgentVersion, c.Cwd, c.CurrentMode = l(c.Agent), l(c.AgentName), l(c.AgentVersion), l(c.Cwd), l(c.CurrentMode)
		c.Modes = make([]driver.ModeInfo, len(s.Modes))
		for i, m := range s.Modes {
			c.Modes[i] = driver.ModeInfo{ID: l(m.ID), Name: l(m.Name), Description: l(m.Description)}
		}
		ev.Started = &c
	}
	// The events a flood is made of are copied only when they change.
	if m := ev.Message; m != nil && (l(m.MessageID) != m.MessageID || safetext.Text(m.Text) != m.Text) {
		c := *m
		c.MessageID, c.Text = l(c.MessageID), safetext.Text(c.Text)
		ev.Message = &c
	}
	if tc := ev.ToolCall; tc != nil && !toolCallSafe(tc) {
		c := SafeToolCall(*tc)
		ev.ToolCall = &c
	}
	if p := ev.Plan; p != nil && !planSafe(p) {
		c := driver.Plan{Entries: make([]driver.PlanEntry, len(p.Entries))}
		for i, e := range p.Entries {
			c.Entries[i] = driver.PlanEntry{Content: l(e.Content), Priority: l(e.Priority), Status: l(e.Status)}
		}
		ev.Plan = &c
	}
	if p := ev.Permission; p != nil && !toolCallSafe(&p.ToolCall) {
		c := *p
		c.ToolCall = SafeToolCall(p.ToolCall)
		ev.Permission = &c
	}
	if d := ev.Decision; d != nil {
		c := *d
		c.Title, c.ToolKind, c.OptionID, c.Outcome, c.Verdict = l(c.Title), driver.ToolKind(l(string(c.ToolKind))), l(c.OptionID), l(c.Outcome), l(c.Verdict)
		c.DecidedBy, c.Reason = driver.Provenance(l(string(c.DecidedBy))), l(c.Reason)
		ev.Decision = &c
	}
	if e := ev.Elicitation; e != nil {
		c := *e
		c = SafeElicitation(c)
		ev.Elicitation = &c
	}
	if a := ev.ElicitationAnswer; a != nil {
		c := *a
		c.Action, c.DecidedBy, c.Reason = driver.ElicitAction(l(string(c.Action))), l(c.DecidedBy), l(c.Reason)
		ev.ElicitationAnswer = &c
	}
	if e := ev.ElicitationComplete; e != nil {
		c := *e
		c.ElicitationID = l(c.ElicitationID)
		ev.ElicitationComplete = &c
	}
	if m := ev.Mode; m != nil {
		ev.Mode = &driver.Mode{ID: l(m.ID)}
	}
	if len(ev.Commands) > 0 {
		cs := make([]driver.Command, len(ev.Commands))
		for i, c := range ev.Commands {
			cs[i] = driver.Command{Name: l(c.Name), Description: l(c.Description), Hint: l(c.Hint)}
		}
		ev.Commands = cs
	}
	if len(ev.Config) > 0 {
		cs := make([]driver.ConfigOption, len(ev.Config))
		for i, o := range ev.Config {
			o.ID, o.Name = l(o.ID), l(o.Name)
			o.CurrentValue = []byte(l(string(o.CurrentValue)))
			cs[i] = o
		}
		ev.Config = cs
	}
	if in := ev.Info; in != nil && in.Title != nil {
		title := l(*in.Title)
		ev.Info = &driver.SessionInfo{Title: &title, UpdatedAt: in.UpdatedAt}
	}
	if u := ev.Usage; u != nil {
		c := *u
		c.Currency = l(c.Currency)
		ev.Usage = &c
	}
	if s := ev.Status; s != nil {
		ev.Status = &driver.Status{State: l(s.State)}
	}
	if s := ev.Screen; s != nil {
		c := driver.ScreenDelta{From: s.From, Lines: make([]string, len(s.Lines))}
		for i, x := range s.Lines {
			c.Lines[i] = l(x)
		}
		ev.Screen = &c
	}
	if f := ev.File; f != nil {
		c := *f
		c.Path = l(c.Path)
		ev.File = &c
	}
	if x := ev.Terminal; x != nil {
		c := *x // the command line is quoted by ShellLine, which escapes
		c.Signal = l(c.Signal)
		ev.Terminal = &c
	}
	if t := ev.Turn; t != nil {
		c := *t
		c.StopReason = l(c.StopReason)
		ev.Turn = &c
	}
	if e := ev.Error; e != nil {
		ev.Error = &driver.ErrorInfo{Code: l(e.Code), Message: l(e.Message)}
	}
	if p := ev.Process; p != nil {
		c := *p
		c.Signal, c.Stderr = l(c.Signal), safetext.Text(c.Stderr)
		ev.Process = &c
	}
	if r := ev.Raw; r != nil {
		c := *r
		c.Kind = driver.RawKind(l(string(c.Kind)))
		ev.Raw = &c
	}
	return ev
}

// SafeToolCall returns tc with what is shown of it made safe for a
// terminal: title, kind, name, id, paths on one line each; text and diffs
// keep their lines. Raw input and output are left as they are: they are
// not shown, and the command is read from them (and quoted) as it runs.
func SafeToolCall(tc driver.ToolCall) driver.ToolCall {
	l := safetext.Line
	tc.ID, tc.Title, tc.Kind, tc.Status, tc.Name = l(tc.ID), l(tc.Title), driver.ToolKind(l(string(tc.Kind))), l(tc.Status), l(tc.Name)
	if len(tc.Locations) > 0 {
		locs := make([]driver.Location, len(tc.Locations))
		for i, x := range tc.Locations {
			locs[i] = driver.Location{Path: l(x.Path), Line: x.Line}
		}
		tc.Locations = locs
	}
	if len(tc.Content) > 0 {
		cs := make([]driver.ToolContent, len(tc.Content))
		for i, c := range tc.Content {
			c.Type, c.Path, c.TerminalID, c.Text = l(c.Type), l(c.Path), l(c.TerminalID), safetext.Text(c.Text)
			c.NewText = safetext.Text(c.NewText)
			if c.OldText != nil {
				old := safetext.Text(*c.OldText)
				c.OldText = &old
			}
			cs[i] = c
		}
		tc.Content = cs
	}
	return tc
}

func lineSafe(ss ...string) bool {
	for _, s := range ss {
		if safetext.Line(s) != s {
			return false
		}
	}
	return true
}

func toolCallSafe(tc *driver.ToolCall) bool {
	if !lineSafe(tc.ID, tc.Title, string(tc.Kind), tc.Status, tc.Name) {
		return false
	}
	for _, x := range tc.Locations {
		if !lineSafe(x.Path) {
			return false
		}
	}
	for _, c := range tc.Content {
		if !lineSafe(c.Type, c.Path, c.TerminalID) || safetext.Text(c.Text) != c.Text || safetext.Text(c.NewText) != c.NewText ||
			(c.OldText != nil && safetext.Text(*c.OldText) != *c.OldText) {
			return false
		}
	}
	return true
}

func planSafe(p *driver.Plan) bool {
	for _, e := range p.Entries {
		if !lineSafe(e.Content, e.Priority, e.Status) {
			return false
		}
	}
	return true
}

// SafeElicitation returns req with what a form shows of it made safe for
// a terminal: message, URL, and each field's name, title, description,
// choices, pattern and default. Ids are left as they are: they are not
// shown, and the answer names them.
func SafeElicitation(req driver.ElicitationRequest) driver.ElicitationRequest {
	l := safetext.Line
	req.Message, req.URL, req.Mode = safetext.Text(req.Message), l(req.URL), driver.ElicitMode(l(string(req.Mode)))
	if len(req.Fields) > 0 {
		fs := make([]driver.ElicitField, len(req.Fields))
		for i, f := range req.Fields {
			f.Name, f.Title, f.Description, f.Pattern = l(f.Name), l(f.Title), l(f.Description), l(f.Pattern)
			f.Enum, f.EnumNames = lines(f.Enum), lines(f.EnumNames)
			if s, ok := f.Default.(string); ok {
				f.Default = l(s)
			}
			fs[i] = f
		}
		req.Fields = fs
	}
	return req
}

func lines(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = safetext.Line(s)
	}
	return out
}
