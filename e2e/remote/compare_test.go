package remote_test

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// A compare over NATS (tai hub, a worker with the built-in agent): each
// candidate runs on the worker, nothing is merged by the run, each is
// scored by the check in its worktree, and --pick best merges the one
// that passed into the target through the fleet's merge queue.
func TestCompareOverNATS(t *testing.T) {
	e := &env{t: t, state: t.TempDir()}
	url := taiHub(e)
	repo := planRepo(t, map[string]string{
		"right.yaml": "steps:\n  - write: {path: LICENSE, content: \"MIT\\n\"}\n  - text: done\n",
		"wrong.yaml": "steps:\n  - write: {path: COPYING, content: \"MIT\\n\"}\n  - text: done\n",
	})
	// --dir: a directory of this test's own, removed with it (the default
	// is TestHubIsClosedByDefault's).
	w := e.cmd(taiBin, "worker", "--nats", url, "--name", "w", "--dir", t.TempDir())
	w.Stderr = &prefixWriter{t: t, p: "w"}
	e.start(w)

	// --approve all: the scripts write, with nobody at a terminal to
	// answer their asks.
	cmd := e.cmd(taiBin, "compare", "--nats", url, "--run-id", "cmpn", "--approve", "all", "--script", "right=right.yaml", "--script", "wrong=wrong.yaml",
		"--check", "test -f LICENSE", "--pick", "best", "-o", "json", "add a license")
	cmd.Dir = repo
	cmd.Stderr = &prefixWriter{t: t, p: "compare"}
	out, err := cmd.Output()
	var r struct {
		Status     string `json:"status"`
		Best       string `json:"best"`
		Picked     string `json:"picked"`
		Target     string `json:"target"`
		Error      string `json:"error"`
		Candidates []struct {
			Agent  string `json:"agent"`
			Status string `json:"status"`
			Check  *struct {
				Passed bool `json:"passed"`
			} `json:"check"`
			Files int `json:"files"`
		} `json:"candidates"`
	}
	if jerr := json.Unmarshal(out, &r); jerr != nil || err != nil {
		t.Fatalf("tai compare --nats: %v (%v)\n%s", err, jerr, out)
	}
	if r.Best != "right" || r.Picked != "right" || len(r.Candidates) != 2 {
		t.Fatalf("best %q picked %q: %s", r.Best, r.Picked, out)
	}
	for _, c := range r.Candidates {
		want := c.Agent == "right"
		if c.Check == nil || c.Check.Passed != want || c.Files != 1 {
			t.Errorf("%s: %s", c.Agent, out)
		}
	}
	if got := git(t, repo, "show", r.Target+":LICENSE"); got != "MIT" {
		t.Errorf("LICENSE on %s: %q", r.Target, got)
	}
	if out := git(t, repo, "ls-tree", "--name-only", r.Target); filepath.Base(out) == "COPYING" {
		t.Errorf("wrong's COPYING is on the target: %s", out)
	}
}
