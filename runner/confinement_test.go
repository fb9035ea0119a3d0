package runner

import (
	"strings"
	"testing"

	"github.com/tai-dev/tai/sandbox"
)

func TestConfinement(t *testing.T) {
	on := &sandbox.Status{Mode: sandbox.ModeAuto, Enabled: true}
	off := &sandbox.Status{Mode: sandbox.ModeOff}
	tests := []struct {
		name string
		st   *sandbox.Status
		own  string
		by   ConfinedBy
		note string
	}{
		{"tai's, the agent has none", on, "", ConfinedByTai, ""},
		{"tai's; the agent's own cannot start under it", on, "bubblewrap", ConfinedByTai, "cannot start under tai's"},
		{"--sandbox off: the agent's own", off, "bubblewrap", ConfinedByAgent, "tai's sandbox is off"},
		{"no launcher: the agent's own", nil, "bubblewrap", ConfinedByAgent, "tai's sandbox is off"},
		{"none", off, "", ConfinedByNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := confinement(tt.st, tt.own)
			if c.By != tt.by || c.AgentSandbox != tt.own || !strings.Contains(c.Note, tt.note) || (tt.note == "") != (c.Note == "") {
				t.Errorf("got %+v", c)
			}
		})
	}
}
