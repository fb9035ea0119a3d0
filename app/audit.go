package app

import (
	"fmt"
	"os"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/exitcode"
)

// AuditVerify checks a log's hash chain and says where it breaks. Exit 0
// only for a log that verifies completely.
func AuditVerify(path string, std IO) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(std.Err, "tai audit verify:", err)
		return int(exitcode.Usage)
	}
	defer f.Close()
	rep, err := audit.Verify(f)
	if err != nil {
		fmt.Fprintln(std.Err, "tai audit verify:", err)
		return int(exitcode.AgentError)
	}
	if rep.OK {
		ended := ""
		if !rep.Ended {
			ended = " (no run.end entry: the run did not finish, or its last entries were removed)"
		}
		fmt.Fprintf(std.Out, "OK: %d entries, chain intact, head %s%s\n", rep.Entries, short(rep.Head), ended)
		return 0
	}
	fmt.Fprintf(std.Out, "FAILED at line %d: %s\n%d entries before it verify.\n", rep.FirstBad, rep.Problem, rep.Entries)
	return int(exitcode.AgentError)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// AuditShow renders a log readably, or passes matching lines through.
func AuditShow(path string, f audit.Filter, asJSON bool, std IO) int {
	file, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(std.Err, "tai audit show:", err)
		return int(exitcode.Usage)
	}
	defer file.Close()
	if asJSON {
		err = audit.RenderJSON(std.Out, file, f)
	} else {
		err = audit.Render(std.Out, file, f)
	}
	if err != nil {
		fmt.Fprintln(std.Err, "tai audit show:", err)
		return int(exitcode.AgentError)
	}
	return 0
}
