//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
)

// Hiding processes (Config.HideProcesses): the native launcher starts the
// agent below an init of its own in new PID and mount namespaces (and a
// user namespace mapping the user to itself, where tai is not root), which
// mounts a /proc of the namespace before it enforces Landlock (which
// forbids mounts): the agent and all it starts see their own processes
// only, not the environments of the user's others (tai's, other runs', a
// hub's). The launcher stays outside, as the subreaper it was, and ends
// as the agent did (an init cannot die of a signal it is sent: it hands
// the agent's status over). See hidden_init in launcher_linux.c.

// canHide says whether a launcher here can hide processes, found once per
// launcher by a launch of sh -c : (where user namespaces are off, or a
// container's masked /proc keeps a new one from being mounted, it cannot).
func canHide(exe, impl string) error {
	if !Native || impl == "go" {
		return errors.New("processes visible: the Go launcher (a build without cgo) does not hide them")
	}
	key := exe + "\x00" + impl
	v, _ := hideProbes.LoadOrStore(key, sync.OnceValue(func() error { return probeHide(exe, impl) }))
	return v.(func() error)()
}

var hideProbes sync.Map

func probeHide(exe, impl string) error {
	if exe == "" {
		exe = "/proc/self/exe"
	}
	sb := &Sandbox{exe: exe, impl: impl, hide: true}
	cmd := exec.Command("/bin/sh", "-c", ":")
	if cmd.Err != nil {
		return fmt.Errorf("processes visible: no /bin/sh to try a PID namespace with: %w", cmd.Err)
	}
	p, err := sb.Wrap(cmd)
	if err != nil {
		return fmt.Errorf("processes visible: %w", err)
	}
	err = p.Started(cmd.Start())
	werr := cmd.Wait()
	p.Release()
	var ee *exec.ExitError
	if err == nil && werr != nil && !errors.As(werr, &ee) {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("processes visible: a PID namespace of its own cannot be had here: %w", err)
	}
	return nil
}
