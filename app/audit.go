package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/internal/statedir"
)

// AuditVerify checks a log's hash chain and says where it breaks. Exit 0
// only for a log that verifies completely and records a run.
func AuditVerify(arg string, complete, asJSON bool, std IO) error {
	f, err := openAuditLog(arg)
	if err != nil {
		return err
	}
	defer f.Close()
	rep, err := audit.Verify(f)
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	v := verdict(rep, complete)
	if asJSON {
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(std.Out, v.Text)
	}
	if !v.OK {
		return exitcode.Said(exitcode.AgentError)
	}
	return nil
}

// auditVerdict is audit verify's answer, as text and as JSON.
type auditVerdict struct {
	OK       bool   `json:"ok"`
	Entries  int    `json:"entries"`
	Head     string `json:"head,omitempty"`
	Ended    bool   `json:"ended"`
	Complete bool   `json:"complete_required"`
	FirstBad int    `json:"first_bad_line,omitempty"`
	Problem  string `json:"problem,omitempty"`
	Text     string `json:"-"`
}

// verdict judges a verified log. With complete (the form for a CI gate),
// a log without its run.end is a failure: its end may have been cut off.
func verdict(rep audit.Report, complete bool) auditVerdict {
	v := auditVerdict{OK: rep.OK, Entries: rep.Entries, Head: rep.Head, Ended: rep.Ended, Complete: complete,
		FirstBad: rep.FirstBad, Problem: rep.Problem}
	switch {
	case rep.OK && rep.Entries == 0:
		v.OK, v.Problem = false, "no entries (the file is empty)"
		v.Text = "FAILED: " + v.Problem
	case rep.OK && !rep.Started:
		v.OK, v.Problem = false, "no run.start entry: not a log of a tai run"
		v.Text = fmt.Sprintf("FAILED: %d entries verify, but none is run.start: not a log of a tai run", rep.Entries)
	case rep.OK && !rep.Ended && complete:
		v.OK, v.Problem = false, "no run.end entry: the run did not finish, or its last entries were removed"
		v.Text = fmt.Sprintf("FAILED: %d entries verify, chain intact, head %s, but there is no run.end entry "+
			"(the run did not finish, or its last entries were removed)", rep.Entries, rep.Head)
	case rep.OK:
		ended := ""
		if !rep.Ended {
			ended = " (no run.end entry: the run did not finish, or its last entries were removed; --complete fails it)"
		}
		v.Text = fmt.Sprintf("OK: %d entries, chain intact, head %s%s", rep.Entries, rep.Head, ended)
	default:
		v.Text = fmt.Sprintf("FAILED at %s\n%d entries before it verify.", rep.Problem, rep.Entries)
	}
	return v
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
	// A run's own log; a fleet's; the log of a tai run as an agent (tai
	// --cap-speak under tai acp or another tai), kept in its own state.
	candidates := []string{audit.DefaultPath(arg), filepath.Join(fleet.RunDir(arg), "audit.jsonl"),
		filepath.Join(statedir.Agents(), "tai", "audit", filepath.Base(audit.DefaultPath(arg)))}
	for _, p := range candidates {
		if f, err := os.Open(p); err == nil {
			return f, nil
		}
	}
	return nil, exitcode.Usagef("audit: %s is neither a file nor a run id with a log (looked in %s)", arg, strings.Join(candidates, " and "))
}
