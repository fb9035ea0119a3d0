package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/sandbox"
)

// StartRefusedCode is the result's error code of an agent that exited or
// stalled at start under the sandbox.
const StartRefusedCode = "sandbox_start"

// startRefused explains a start that failed under the sandbox: an agent
// that exits or never finishes its handshake there was most likely
// refused a path it needs. The kernel does not tell which, so the paths
// come from what the agent printed (EACCES and the like), read against the
// sandbox's grants; where none can be read, the flag is named all the
// same. The explanation leads the run's error (the result's error, the
// audit log's run.end, the message on stderr) and is an error of its own
// in the result; the exit code stays err's.
func (r *run) startRefused(err error, stderr string) error {
	if err == nil || r.sb == nil || !r.sb.Status().Enabled {
		return err
	}
	var what string
	var exit *driver.AgentExitError
	switch code := exitcode.Of(err); {
	case errors.As(err, &exit) && (exit.ExitCode != 0 || exit.Signal != ""):
		what = "exited at start"
		stderr += "\n" + exit.Stderr // a terminal's screen, for drivers without a stderr of their own
	case code == exitcode.Timeout || code == exitcode.Interrupted:
		what = "did not finish its start (no answer to its handshake) before the run was stopped"
	default:
		return err
	}
	home, _ := os.UserHomeDir()
	msg := startMessage(what, r.sb.Denials(stderr, home), home)
	r.col.mu.Lock()
	r.col.res.Errors = append(r.col.res.Errors, driver.ErrorInfo{Code: StartRefusedCode, Message: msg})
	r.col.mu.Unlock()
	return fmt.Errorf("%s\n%w", msg, err)
}

// startMessage is what startRefused says: the refused paths, and the
// flag that opens a directory; --sandbox off when nothing can be named.
// The paths are the agent's words: a handful are named, and no directory
// that would open the whole home (or /, or a top-level one) is offered to
// the flag, whatever the agent printed.
func startMessage(what string, ds []sandbox.Denial, home string) string {
	const most = 5
	var b strings.Builder
	fmt.Fprintf(&b, "the agent %s under the sandbox", what)
	var named, open []string
	for _, d := range ds {
		if len(named) == most {
			named = append(named, fmt.Sprintf("and %d more", len(ds)-most))
			break
		}
		switch {
		case d.Hidden:
			named = append(named, d.Path+" (read: a secret path, hidden whatever the flags)")
		case d.Own:
			named = append(named, d.Path+" (write: tai's own files, never the agent's)")
		default:
			named = append(named, d.Path+" (write)")
			if dir := writeRootFor(d.Path); offerable(dir, home) && !slices.Contains(open, dir) {
				open = append(open, dir)
			}
		}
	}
	if len(named) > 0 {
		fmt.Fprintf(&b, "; it was refused: %s.", strings.Join(named, ", "))
	} else {
		b.WriteString(", which may have refused it a path its stderr does not name.")
	}
	if len(open) > 0 {
		b.WriteString(" If it needs that directory: --sandbox-write " + strings.Join(open, " --sandbox-write ") + " (or write_roots in the policy).")
		return b.String()
	}
	b.WriteString(" If it needs a directory outside the workspace: --sandbox-write DIR (or write_roots in the policy); --sandbox off as the last resort.")
	return b.String()
}

// offerable: dir is narrow enough to offer to --sandbox-write on an
// agent's word: not /, not a top-level directory, not home nor one above.
func offerable(dir, home string) bool {
	dir = filepath.Clean(dir)
	if strings.Count(dir, "/") < 2 {
		return false
	}
	if home != "" {
		h := filepath.Clean(home)
		if dir == h || strings.HasPrefix(h, dir+"/") {
			return false
		}
	}
	return true
}

// writeRootFor is the directory to open for a refused path: the path
// itself unless it is an existing file (then its directory).
func writeRootFor(p string) string {
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return filepath.Dir(p)
	}
	return p
}
