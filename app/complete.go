package app

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/runner"
	"github.com/tai-dev/tai/sessions"
)

// DriverNames returns the drivers this build has, for completion and
// errors.
func DriverNames() []string {
	var out []string
	for _, d := range runner.Drivers() {
		out = append(out, string(d))
	}
	return out
}

// SessionIDs returns the ids of the sessions tai ran in workspace (""
// = the current directory), newest first and each once, with what it was
// last asked (for completion). A missing store is no sessions.
func SessionIDs(ctx context.Context, workspace string) []string {
	if workspace == "" {
		workspace, _ = os.Getwd()
	}
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return nil
	}
	recs, _, err := sessionStore().List(ctx, ws)
	if err != nil {
		return nil
	}
	// A session resumed in several runs has a record of each: offered
	// once, as its newest run left it.
	out := make([]string, 0, len(recs))
	seen := map[string]bool{}
	for i := len(recs) - 1; i >= 0; i-- {
		if id := recs[i].SessionID; id != "" && !seen[id] {
			seen[id] = true
			out = append(out, completion(id, describeSession(recs[i])))
		}
	}
	return out
}

func describeSession(r sessions.Record) string {
	d := r.Agent + " " + r.Status
	if p := strings.TrimSpace(r.Prompt); p != "" {
		if len(p) > 40 {
			p = p[:40] + "…"
		}
		d += ": " + p
	}
	return d
}

// completion is cobra's "value\tdescription" form; tabs and newlines in the
// description would break it.
func completion(value, desc string) string {
	return value + "\t" + strings.NewReplacer("\t", " ", "\n", " ").Replace(desc)
}

// FleetRunIDs returns the fleet runs kept in the state directory, newest
// first (run ids sort by time).
func FleetRunIDs() []string {
	entries, err := os.ReadDir(statedir.Dir("fleet"))
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids
}

// RunIDs returns the runs with an audit log in the state directory (tai
// runs' logs and fleet runs), newest first, for `tai audit show RUN_ID`.
func RunIDs() []string {
	var ids []string
	if entries, err := os.ReadDir(statedir.Dir("audit")); err == nil {
		for _, e := range entries {
			if id, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && !e.IsDir() {
				ids = append(ids, id)
			}
		}
	}
	ids = append(ids, FleetRunIDs()...)
	sort.Sort(sort.Reverse(sort.StringSlice(ids)))
	return ids
}
