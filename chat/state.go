package chat

import (
	"sort"
	"strings"
	"sync"

	"github.com/tai-dev/tai/driver"
)

// State is a sink that keeps what completion needs from the session's
// events: the agent's latest slash commands, its modes and its models,
// and the end of each turn.
type State struct {
	mu       sync.Mutex
	commands []driver.Command
	modes    []string
	models   []string
	// Turns receives one value per turn.ended.
	Turns chan struct{}
}

// NewState returns an empty State.
func NewState() *State { return &State{Turns: make(chan struct{}, 16)} }

// Emit implements driver.Sink.
func (s *State) Emit(ev driver.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Type {
	case driver.EventSessionStarted:
		s.modes = s.modes[:0]
		for _, m := range ev.Started.Modes {
			s.modes = append(s.modes, m.ID)
		}
		s.config(ev.Started.Config)
	case driver.EventCommands:
		s.commands = append([]driver.Command(nil), ev.Commands...)
	case driver.EventConfigOptions:
		s.config(ev.Config)
	case driver.EventTurnEnded:
		select {
		case s.Turns <- struct{}{}:
		default:
		}
	}
}

func (s *State) config(opts []driver.ConfigOption) {
	for _, o := range opts {
		var vals []string
		for _, v := range o.Values {
			vals = append(vals, v.Value)
		}
		switch o.Category {
		case "model":
			s.models = vals
		case "mode":
			if len(s.modes) == 0 {
				s.modes = vals
			}
		}
	}
}

// Local commands tai handles itself, not the agent.
var local = []Completion{
	{Text: "/mode", Hint: "switch the session's mode: /mode ID"},
	{Text: "/model", Hint: "switch the model: /model ID"},
	{Text: "/quit", Hint: "end the session (or Ctrl-D)"},
}

// Complete completes a slash command (the agent's, with their input
// hints, and tai's /mode, /model, /quit) or the argument of /mode and
// /model.
func (s *State) Complete(line string) (int, []Completion) {
	if !strings.HasPrefix(line, "/") {
		return 0, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd, arg, hasArg := strings.Cut(line, " ")
	if !hasArg {
		var out []Completion
		for _, c := range s.commands {
			if strings.HasPrefix("/"+c.Name, cmd) {
				hint := c.Description
				if c.Hint != "" {
					hint += " (" + c.Hint + ")"
				}
				out = append(out, Completion{Text: "/" + c.Name, Hint: hint})
			}
		}
		for _, c := range local {
			if strings.HasPrefix(c.Text, cmd) && !containsText(out, c.Text) {
				out = append(out, c)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Text < out[j].Text })
		return 0, out
	}
	var vals []string
	switch cmd {
	case "/mode":
		vals = s.modes
	case "/model":
		vals = s.models
	default:
		return 0, nil
	}
	arg = strings.TrimLeft(arg, " ")
	var out []Completion
	for _, v := range vals {
		if strings.HasPrefix(v, arg) {
			out = append(out, Completion{Text: v})
		}
	}
	return len(line) - len(arg), out
}

func containsText(cs []Completion, t string) bool {
	for _, c := range cs {
		if c.Text == t {
			return true
		}
	}
	return false
}
