package runner

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
)

// auditSink writes the events that matter for accountability into the
// audit log: decisions with their provenance, file writes, commands, mode
// changes, process exits and errors. A write failure (a full disk) is kept
// and reported at the end of the run; it never blocks or kills the agent.
type auditSink struct {
	log  *audit.Log
	task string // the fleet task this run is, named in every entry

	mu   sync.Mutex
	mode string
	err  error
	// early are the decisions written before they were answered (see
	// decided), by request id: their event writes nothing more.
	early map[string]driver.PermissionDecision
}

// decided writes an allow's permission.decision entry before the allow
// reaches the agent, so that an allow whose entry cannot be written is
// not given. The decision's event then adds nothing, unless the driver
// changed the decision meanwhile (a cancel), when it is written too.
func (a *auditSink) decided(session string, d driver.PermissionDecision) error {
	err := a.log.AppendTask(audit.KindPermissionDecision, session, a.task, decisionEntry(&d))
	if err != nil {
		a.fail(err)
		return err
	}
	a.mu.Lock()
	if a.early == nil {
		a.early = map[string]driver.PermissionDecision{}
	}
	a.early[d.RequestID] = d
	a.mu.Unlock()
	return nil
}

// writtenEarly reports (once) whether d's entry was written by decided.
func (a *auditSink) writtenEarly(d driver.PermissionDecision) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.early[d.RequestID]
	if ok {
		delete(a.early, d.RequestID)
	}
	return ok && e == d
}

func decisionEntry(d *driver.PermissionDecision) audit.PermissionDecision {
	var b bytes.Buffer
	d.WriteJSON(&b)
	full := json.RawMessage(b.Bytes())
	return audit.PermissionDecision{
		RequestID: d.RequestID, Decision: d.Verdict, Option: optionLabel(d), DecidedBy: string(d.DecidedBy),
		Reason: d.Reason, Via: d.Via, Request: full, Unrequested: d.Unrequested,
	}
}

func (a *auditSink) append(kind, session string, data any) {
	if err := a.log.AppendTask(kind, session, a.task, data); err != nil {
		a.fail(err)
	}
}

func (a *auditSink) fail(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
}

// failed returns the first write error.
func (a *auditSink) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *auditSink) Emit(ev driver.Event) {
	switch ev.Type {
	case driver.EventSessionStarted:
		a.mu.Lock()
		a.mode = ev.Started.CurrentMode
		a.mu.Unlock()
		a.append(audit.KindSessionStart, ev.Session, ev.Started)
	case driver.EventPermissionAsked:
		var b bytes.Buffer
		var req json.RawMessage // none for a raw value that is not JSON, as with json.Marshal
		if ev.Permission.WriteJSON(&b) == nil {
			req = b.Bytes()
		}
		var opts []string
		for _, o := range ev.Permission.Options {
			opts = append(opts, o.ID+"("+o.Kind+")")
		}
		a.append(audit.KindPermissionRequest, ev.Session, audit.PermissionRequest{
			RequestID: ev.Permission.ID, Tool: string(ev.Permission.ToolCall.Kind), Title: ev.Permission.ToolCall.Title,
			Options: opts, Request: req, Unrequested: ev.Permission.Unrequested,
		})
	case driver.EventPermissionDecided:
		if !a.writtenEarly(*ev.Decision) {
			a.append(audit.KindPermissionDecision, ev.Session, decisionEntry(ev.Decision))
		}
	case driver.EventFileWritten:
		f := ev.File
		a.append(audit.KindFileWrite, ev.Session, audit.FileWrite{Path: f.Path, Size: f.Size, HashBefore: f.HashBefore, HashAfter: f.HashAfter})
	case driver.EventTerminalExited:
		a.append(audit.KindTerminal, ev.Session, ev.Terminal)
	case driver.EventModeChanged:
		a.mu.Lock()
		from := a.mode
		a.mode = ev.Mode.ID
		a.mu.Unlock()
		a.append(audit.KindModeChange, ev.Session, audit.ModeChange{From: from, To: ev.Mode.ID, By: "agent"})
	case driver.EventProcessExited:
		p := ev.Process
		a.append(audit.KindProcessExit, ev.Session, audit.Process{PID: p.Pid, ExitStatus: p.ExitCode, Signal: p.Signal})
	case driver.EventError:
		a.append(audit.KindError, ev.Session, audit.Error{Error: ev.Error.Message, Op: ev.Error.Code})
	case driver.EventScreenFinal:
		// A screen-based agent's last screen: the scrollback users lose
		// when a TUI dies is kept with the run's record.
		a.append(audit.KindScreenFinal, ev.Session, ev.FinalScreen)
	case driver.EventAgentStop:
		// A CLI's turn end, with where it keeps its own transcript of the
		// session.
		a.append(audit.KindAgentStop, ev.Session, ev.AgentStop)
	case driver.EventTurnEnded:
		a.append(audit.KindTurnEnd, ev.Session, ev.Turn)
	case driver.EventElicitationAsked:
		a.append(audit.KindElicitationRequest, ev.Session, ev.Elicitation)
	case driver.EventElicitationAnswered:
		// The event's copy: secret fields are redacted already.
		a.append(audit.KindElicitationAnswer, ev.Session, ev.ElicitationAnswer)
	case driver.EventElicitationCompleted:
		a.append(audit.KindElicitationComplete, ev.Session, ev.ElicitationComplete)
	}
}

func optionLabel(d *driver.PermissionDecision) string {
	if d.OptionID == "" {
		return d.Outcome
	}
	if d.OptionKind != "" {
		return d.OptionID + " (" + d.OptionKind + ")"
	}
	return d.OptionID
}
