package app

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/policy"
)

func TestCompareBest(t *testing.T) {
	pass, fail := &fleet.CheckResult{Passed: true}, &fleet.CheckResult{}
	no := false
	cand := func(name string, st fleet.TaskStatus, check *fleet.CheckResult, files, ins int) Candidate {
		return Candidate{Agent: name, Status: st, Check: check, Files: files, Insertions: ins}
	}
	outside := cand("o", fleet.StatusDone, pass, 1, 1)
	outside.OwnsHeld = &no
	for _, tc := range []struct {
		name    string
		cs      []Candidate
		checked bool
		want    string
		why     string
	}{
		{"smallest passing diff", []Candidate{cand("a", fleet.StatusDone, pass, 2, 9), cand("b", fleet.StatusDone, pass, 1, 3), cand("c", fleet.StatusDone, fail, 1, 1)}, true, "b", "smallest"},
		{"fewer files on equal lines", []Candidate{cand("a", fleet.StatusDone, pass, 2, 3), cand("b", fleet.StatusDone, pass, 1, 3)}, true, "b", "smallest"},
		{"tie", []Candidate{cand("a", fleet.StatusDone, pass, 1, 3), cand("b", fleet.StatusDone, pass, 1, 3)}, true, "", "tie: a, b"},
		{"none passes", []Candidate{cand("a", fleet.StatusDone, fail, 1, 3)}, true, "", "no candidate"},
		{"failed agent never", []Candidate{cand("a", fleet.StatusFailed, nil, 0, 0), cand("b", fleet.StatusDone, nil, 1, 5)}, false, "b", "finished"},
		{"outside owns never", []Candidate{outside, cand("b", fleet.StatusDone, pass, 1, 5)}, true, "b", "smallest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := best(tc.cs, tc.checked)
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("best = %q (%s), want %q (%s)", got, why, tc.want, tc.why)
			}
		})
	}
}

func TestSplitNamed(t *testing.T) {
	for _, tc := range []struct{ in, name, val string }{
		{"fast=tai agent builtin", "fast", "tai agent builtin"},
		{"my-agent --flag=x", "cmd1", "my-agent --flag=x"},
		{"a.yaml", "cmd1", "a.yaml"},
	} {
		if n, v := splitNamed(tc.in, "cmd1"); n != tc.name || v != tc.val {
			t.Errorf("splitNamed(%q) = %q, %q", tc.in, n, v)
		}
	}
}

// A candidate's denials are the agent's requests the policy refused, as a
// run's result counts them: tai's own refusal of the self-approving mode
// an agent starts in (qwen's auto, codex's agent) is not one of them.
func TestCountDenials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(path, audit.Options{Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		task string
		d    audit.PermissionDecision
	}{
		{"a", audit.PermissionDecision{RequestID: "1", Decision: "deny", DecidedBy: "default"}},
		{"a", audit.PermissionDecision{RequestID: policy.StartModeRequest, Decision: "deny", DecidedBy: "default"}},
		{"b", audit.PermissionDecision{RequestID: policy.StartModeRequest, Decision: "deny", DecidedBy: "default"}},
		{"b", audit.PermissionDecision{RequestID: "2", Decision: "allow", DecidedBy: "rule:x"}},
		{"c", audit.PermissionDecision{RequestID: "3", Decision: "cancelled", DecidedBy: "human"}},
		{"", audit.PermissionDecision{RequestID: "4", Decision: "deny", DecidedBy: "default"}},
	} {
		if err := log.AppendTask(audit.KindPermissionDecision, "s", e.task, e.d); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := countDenials(path), map[string]int{"a": 1}; !maps.Equal(got, want) {
		t.Errorf("countDenials = %v, want %v", got, want)
	}
}
