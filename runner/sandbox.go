package runner

import (
	"path/filepath"

	"github.com/tai-dev/tai/driver/a2a"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/sandbox"
)

// newSandbox prepares the run's launcher (none for A2A, which starts no
// process) and records how the run is confined in the Result.
func (r *run) newSandbox() error {
	o := r.o
	if o.Sandbox == nil || r.driverName() == a2a.Name {
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
