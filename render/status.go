package render

import (
	"fmt"
	"io"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/cut"
)

// The status line: on a terminal, while the agent is silent in a turn, a
// spinner with the turn's elapsed time and the last thing the agent did.
const (
	statusSilence = time.Second            // silence before the line shows
	statusTick    = 250 * time.Millisecond // its redraw: the spinner's frame, the time
)

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// statusLine is Text's status line state; Text's mutex guards it.
type statusLine struct {
	inTurn   bool      // from a turn's first event to its end
	start    time.Time // the turn's first event
	activity string    // the last thing the agent did
	paused   bool      // a question is on the screen: the line must not draw over it
	shown    bool      // the line is on the screen
	frame    int
	gen      int // the draw scheduled last; an earlier one that fires is stale
}

// statusEvent moves the status line on an event, before it is rendered:
// the line is taken off the screen (the event's output goes where it was),
// and drawn again after the next silence.
func (t *Text) statusEvent(ev driver.Event) {
	if !t.Status {
		return
	}
	s := &t.status
	t.clearStatus()
	s.gen++
	switch ev.Type {
	case driver.EventTurnEnded, driver.EventProcessExited, driver.EventAgentStop:
		s.inTurn, s.paused = false, false
		return
	case driver.EventPermissionAsked, driver.EventElicitationAsked:
		s.paused = true
	case driver.EventPermissionDecided, driver.EventElicitationAnswered:
		s.paused = false
	}
	if !s.inTurn {
		s.inTurn, s.start, s.activity = true, t.clock().Now(), ""
	}
	if a := activityOf(ev); a != "" {
		s.activity = a
	}
	if !s.paused {
		t.scheduleStatus(statusSilence)
	}
}

func (t *Text) clock() quartz.Clock {
	t.writer() // sets the clock
	return t.Clock
}

func (t *Text) scheduleStatus(after time.Duration) {
	gen := t.status.gen
	t.Clock.AfterFunc(after, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if gen != t.status.gen || !t.status.inTurn || t.status.paused || !t.atBOL {
			return // an event came since, or a line is half written
		}
		t.drawStatus()
		t.scheduleStatus(statusTick)
	}, "render", "status")
}

// drawStatus writes the line, after what is buffered.
func (t *Text) drawStatus() {
	s := &t.status
	_ = t.out.Flush()
	elapsed := t.Clock.Now().Sub(s.start).Truncate(time.Second)
	line := fmt.Sprintf("%s working %s", spinnerFrames[s.frame%len(spinnerFrames)], elapsed)
	if s.activity != "" {
		line += " · " + s.activity
	}
	s.frame++
	_, _ = io.WriteString(t.W, "\r\x1b[K"+t.style(dim, line))
	s.shown = true
}

// clearStatus takes the line off the screen, ahead of what comes next.
func (t *Text) clearStatus() {
	if t.status.shown {
		_, _ = t.writer().WriteString("\r\x1b[K")
		t.status.shown = false
	}
}

// activityOf is what an event says the agent is doing, for the line.
func activityOf(ev driver.Event) string {
	switch ev.Type {
	case driver.EventMessage:
		if ev.Message.Role == driver.RoleThought {
			return "thinking"
		}
		return "writing"
	case driver.EventToolCall:
		return "tool: " + cut.End(ev.ToolCall.Title, 50)
	case driver.EventUsage:
		if u := ev.Usage; u.ContextUsed > 0 {
			return fmt.Sprintf("%d tokens", u.ContextUsed)
		}
	case driver.EventPlan:
		return "planning"
	}
	return ""
}

// TurnStarted starts the status line's clock for a turn whose prompt was
// just sent (chat's next line): the agent may be silent from its start.
func (t *Text) TurnStarted() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.Status {
		return
	}
	s := &t.status
	s.gen++
	s.inTurn, s.paused, s.start, s.activity = true, false, t.clock().Now(), ""
	t.scheduleStatus(statusSilence)
}
