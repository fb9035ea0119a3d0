package runner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tai-dev/tai/driver/a2a"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/sandbox"
)

// newSandbox prepares the run's launcher (none for A2A, which starts no
// process) and records how the run is confined in the Result.
func (r *run) newSandbox() error {
	o := r.o
	if r.driverName() == a2a.Name {
		return nil
	}
	if o.Sandbox == nil {
		r.col.res.Confinement = confinement(nil, o.OwnSandbox)
		return nil
	}
	cfg := *o.Sandbox
	if cwd, err := filepath.Abs(o.Cwd); err == nil {
		// The --add-dir roots are the workspace's too.
		cfg.Write = append(append([]string{cwd}, o.AddDirs...), cfg.Write...)
	}
	sb, err := sandbox.New(cfg)
	if err != nil {
		// --sandbox on where the kernel has no Landlock (ErrUnsupported)
		// is a usage error: the flag asks for what cannot be had.
		st := sandbox.Status{Mode: cfg.Mode, Reason: err.Error()}
		r.col.mu.Lock()
		r.col.res.Sandbox = &st
		r.col.mu.Unlock()
		return exitcode.With(exitcode.Usage, err)
	}
	r.sb = sb
	st := sb.Status()
	r.col.res.Sandbox = &st
	r.col.res.Confinement = confinement(&st, o.OwnSandbox)
	return nil
}

// sandboxStatus refreshes the Result's sandbox status at the end (the
// cgroup is known once a process started).
func (r *run) sandboxStatus() {
	if r.sb != nil {
		st := r.sb.Status()
		r.col.mu.Lock()
		r.col.res.Sandbox = &st
		r.col.mu.Unlock()
	}
}

// ConfinedBy is whose sandbox confines the agent.
type ConfinedBy string

const (
	ConfinedByTai   ConfinedBy = "tai"   // tai's launcher (Landlock)
	ConfinedByAgent ConfinedBy = "agent" // the agent's own sandbox only
	ConfinedByNone  ConfinedBy = "none"
)

// Confinement is the result's account of whose sandbox is in force.
type Confinement struct {
	By ConfinedBy `json:"by"`
	// AgentSandbox is the agent's own sandbox, if it has one.
	AgentSandbox string `json:"agent_sandbox,omitempty"`
	Note         string `json:"note,omitempty"`
}

// confinement says whose sandbox is in force: tai's when its Landlock is
// (the agent's own cannot start under it), else the agent's own, else
// none.
func confinement(st *sandbox.Status, own string) *Confinement {
	c := &Confinement{By: ConfinedByNone, AgentSandbox: own}
	switch {
	case st != nil && st.Enabled:
		c.By = ConfinedByTai
		if own != "" {
			c.Note = fmt.Sprintf("the agent's own sandbox (%s) cannot start under tai's (Landlock forbids its mounts): "+
				"its commands ask to leave it and, allowed, run confined by tai's", own)
		}
	case own != "":
		c.By, c.Note = ConfinedByAgent, fmt.Sprintf("tai's sandbox is off; the agent's own (%s) confines its commands", own)
	}
	return c
}

// existingDirs are the directories of dirs that exist: a write root made
// later is the sandbox's and the policy's, but the file service can only
// serve a root that is there.
func existingDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}
