package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
)

// AuditVerify checks a log's hash chain and says where it breaks. Exit 0
// only for a log that verifies completely and records a run.
func AuditVerify(arg string, std IO) error {
	f, err := openAuditLog(arg)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := audit.Verify(f)
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	switch {
	case rep.OK && rep.Entries == 0:
		fmt.Fprintln(std.Out, "FAILED: no entries (the file is empty)")
		return exitcode.Said(exitcode.AgentError)
	case rep.OK && !rep.Started:
		fmt.Fprintf(std.Out, "FAILED: %d entries verify, but none is run.start: not a log of a tai run\n", rep.Entries)
		return exitcode.Said(exitcode.AgentError)
	case rep.OK:
		ended := ""
		if !rep.Ended {
			ended = " (no run.end entry: the run did not finish, or its last entries were removed)"
		}
		fmt.Fprintf(std.Out, "OK: %d entries, chain intact, head %s%s\n", rep.Entries, rep.Head, ended)
		return nil
	}
	fmt.Fprintf(std.Out, "FAILED at %s\n%d entries before it verify.\n", rep.Problem, rep.Entries)
	return exitcode.Said(exitcode.AgentError)
}

// AuditShow renders a log readably, or passes matching lines through.
func AuditShow(arg string, f audit.Filter, asJSON bool, std IO) error {
	file, err := openAuditLog(arg)
	if err != nil {
		return err
	}
	defer file.Close()
	if asJSON {
		err = audit.RenderJSON(std.Out, file, f)
	} else {
		err = audit.Render(std.Out, file, f)
	}
	if err != nil {
		return exitcode.With(exitcode.AgentError, fmt.Errorf("audit show %s: %w", file.Name(), err))
	}
	return nil
}

// openAuditLog opens a log by path, or by the id of the run that wrote it:
// a tai run's log ($XDG_STATE_HOME/tai/audit/RUN_ID.jsonl) or a fleet
// run's (its run directory's audit.jsonl).
func openAuditLog(arg string) (*os.File, error) {
	f, err := os.Open(arg)
	if err == nil || !errors.Is(err, fs.ErrNotExist) || strings.ContainsRune(arg, filepath.Separator) || strings.HasSuffix(arg, ".jsonl") {
		if err != nil {
			return nil, exitcode.With(exitcode.Usage, fmt.Errorf("audit: %w", err))
		}
		return f, nil
	}
	candidates := []string{audit.DefaultPath(arg), filepath.Join(fleet.RunDir(arg), "audit.jsonl")}
	for _, p := range candidates {
		if f, err := os.Open(p); err == nil {
			return f, nil
		}
	}
	return nil, exitcode.Usagef("audit: %s is neither a file nor a run id with a log (looked in %s)", arg, strings.Join(candidates, " and "))
}
