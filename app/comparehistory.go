package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/internal/safetext"
)

// CompareWin is one pick of an earlier compare, as its audit log records
// it (the fleet's picked event).
type CompareWin struct {
	Repo        string    `json:"repo"`
	Run         string    `json:"run"`
	Agent       string    `json:"agent"`   // the candidate's name
	Command     string    `json:"command"` // preset or command
	CheckPassed *bool     `json:"check_passed,omitempty"`
	Tokens      int64     `json:"tokens"`
	Cost        float64   `json:"cost"`
	Candidates  int       `json:"candidates"`
	Time        time.Time `json:"ts"`
}

// compareHistory reads the picks of every fleet run's audit log under the
// state directory, oldest first.
func compareHistory() ([]CompareWin, error) {
	dirs, err := filepath.Glob(filepath.Join(filepath.Dir(fleet.RunDir("x")), "*", "audit.jsonl"))
	if err != nil {
		return nil, err
	}
	var wins []CompareWin
	for _, p := range dirs {
		wins = append(wins, picksIn(p)...)
	}
	sort.Slice(wins, func(i, j int) bool { return wins[i].Time.Before(wins[j].Time) })
	return wins, nil
}

func picksIn(path string) []CompareWin {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []CompareWin
	scored := map[string]bool{}
	_ = audit.Read(f, func(_ int, e audit.Entry) error {
		var d struct {
			Event       string      `json:"event"`
			Task        string      `json:"task"`
			Agent       string      `json:"agent"`
			Status      string      `json:"status"`
			Repo        string      `json:"repo"`
			CheckPassed *bool       `json:"check_passed"`
			Usage       fleet.Usage `json:"usage"`
		}
		if e.Kind != audit.KindFleet || json.Unmarshal(e.Data, &d) != nil {
			return nil
		}
		switch fleet.EventKind(d.Event) {
		case fleet.EventStarted:
			scored[d.Task] = true
		case fleet.EventPicked:
			if d.Status != string(fleet.StatusMerged) {
				return nil // a pick whose merge failed (its check, a conflict) won nothing
			}
			out = append(out, CompareWin{Repo: d.Repo, Run: e.Run, Agent: d.Task, Command: d.Agent,
				CheckPassed: d.CheckPassed, Tokens: d.Usage.Tokens, Cost: d.Usage.Cost, Candidates: len(scored), Time: e.Time})
		}
		return nil
	})
	return out
}

// CompareHistory runs `tai compare history`: per repository, which agent
// each earlier compare picked, whether it passed its check, what it cost.
func CompareHistory(asJSON bool, std IO) error {
	wins, err := compareHistory()
	if err != nil {
		return err
	}
	if asJSON {
		if wins == nil {
			wins = []CompareWin{}
		}
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(wins)
	}
	if len(wins) == 0 {
		fmt.Fprintln(std.Err, "no compare has picked a winner yet: tai compare --pick best, or tai compare pick RUN AGENT")
		return nil
	}
	byRepo := map[string][]CompareWin{}
	var repos []string
	for _, w := range wins {
		if byRepo[w.Repo] == nil {
			repos = append(repos, w.Repo)
		}
		byRepo[w.Repo] = append(byRepo[w.Repo], w)
	}
	sort.Strings(repos)
	for _, r := range repos {
		fmt.Fprintln(std.Out, safetext.Line(r))
		tw := tabwriter.NewWriter(std.Out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  WHEN\tRUN\tWINNER\tOF\tCHECK\tTOKENS\tCOST")
		wins := map[string]int{}
		for _, w := range byRepo[r] {
			check := "-"
			if w.CheckPassed != nil {
				check = map[bool]string{true: "pass", false: "FAIL"}[*w.CheckPassed]
			}
			wins[w.Agent]++
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%d\t%.4g\n", w.Time.Local().Format("2006-01-02 15:04"), w.Run, safetext.Line(w.Agent), w.Candidates, check, w.Tokens, w.Cost)
		}
		_ = tw.Flush()
		var names []string
		for a := range wins {
			names = append(names, a)
		}
		sort.Strings(names)
		fmt.Fprint(std.Out, "  wins:")
		for _, a := range names {
			fmt.Fprintf(std.Out, " %s %d", safetext.Line(a), wins[a])
		}
		fmt.Fprintln(std.Out)
	}
	return nil
}
