package streamjson

import (
	"encoding/json"
	"strings"

	"github.com/tai-dev/tai/driver"
)

// taiDecoder decodes a child tai's frames (`tai --cap-speak stream-json`, cap.md):
// they are the common event model already, so most pass through as they
// are. The child's session is the session; its turn.ended ends the turn;
// its control lines are Claude's. What the child decided by its own policy
// keeps that provenance ("tai:<who>"); what it asked this tai about
// (decided_by "answerer") was recorded here already, by can_use_tool.
//
// It keeps the child's permission.asked frames until their decisions come.
type taiDecoder struct {
	*claudeDecoder
	childAsked []driver.Event
}

func (d *taiDecoder) decode(line []byte, typ, _ string, f *Frame) {
	switch typ {
	case "control_request", "control_response", "control_cancel_request", "keep_alive":
		d.claudeDecoder.decode(line, typ, "", f)
		return
	case "result":
		// The child's run is over (its input ended): the process exit that
		// follows says the rest.
		f.raw("tai/result", line)
		return
	}
	var ev driver.Event
	if err := json.Unmarshal(line, &ev); err != nil {
		f.raw(typ, line)
		return
	}
	ev.Seq, ev.Session = 0, "" // this tai numbers its own frames
	switch ev.Type {
	case driver.EventSessionStarted:
		init := &Init{SessionID: line2session(line)}
		if st := ev.Started; st != nil {
			init.Mode, init.Version = st.CurrentMode, st.AgentVersion
		}
		f.Init = init
		// What the child drives, for the record.
		f.raw("tai/session.started", line)
	case driver.EventTurnEnded:
		r := &Result{StopReason: driver.StopEndTurn}
		if ev.Turn != nil {
			r.StopReason, r.Usage = ev.Turn.StopReason, ev.Turn.Usage
		}
		f.Result = r
	case driver.EventProcessExited:
		// The child's agent, not the process this driver runs.
		f.raw("tai/agent_exited", line)
	case driver.EventPermissionAsked:
		// Held until its decision says who decided.
		if ev.Permission != nil {
			d.childAsked = append(d.childAsked, ev)
		}
	case driver.EventPermissionDecided:
		dec := ev.Decision
		if dec == nil {
			f.raw(typ, line)
			return
		}
		asked := d.takeAsk(dec.RequestID)
		if dec.DecidedBy == driver.ByAnswerer {
			return // this tai decided it, through can_use_tool
		}
		dec.DecidedBy = "tai:" + driver.Provenance(strings.TrimPrefix(string(dec.DecidedBy), "tai:"))
		if asked != nil {
			f.emit(*asked)
		}
		f.emit(ev)
	case "":
		f.raw(typ, line)
	default:
		f.emit(ev)
	}
}

// takeAsk removes and returns the child's held permission.asked.
func (d *taiDecoder) takeAsk(id string) *driver.Event {
	for i, ev := range d.childAsked {
		if ev.Permission.ID == id {
			d.childAsked = append(d.childAsked[:i], d.childAsked[i+1:]...)
			return &ev
		}
	}
	return nil
}

// line2session is a frame's session.
func line2session(line []byte) string {
	var h struct {
		Session string `json:"session"`
	}
	_ = json.Unmarshal(line, &h)
	return h.Session
}
