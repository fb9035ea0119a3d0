package readme_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's compare of three built-in-agent scripts, in a user's
// repository, then the pick of the winner it names.
func TestCompare(t *testing.T) {
	u := newUser(t)
	repo := u.repo("proj")
	for name, body := range map[string]string{
		"terse":   "steps:\n  - text: \"Added LICENSE.\"\n  - write: {path: LICENSE, content: \"MIT License\\n\"}\n  - usage: {used: 1200, size: 200000, cost: 0.012, currency: USD}\n",
		"verbose": "steps:\n  - text: \"Added LICENSE and a NOTICE.\"\n  - write: {path: LICENSE, content: \"MIT License\\n\\nCopyright (c) 2026\\n\"}\n  - write: {path: NOTICE, content: \"See LICENSE.\\n\"}\n  - usage: {used: 2500, size: 200000, cost: 0.031, currency: USD}\n",
		"wrong":   "steps:\n  - text: \"Added COPYING.\"\n  - write: {path: COPYING, content: \"MIT\\n\"}\n  - usage: {used: 900, size: 200000, cost: 0.009, currency: USD}\n",
	} {
		writeFile(t, filepath.Join(repo, "s", name+".yaml"), body)
	}
	// --approve all (in the README line): the scripts write files, with
	// nobody at a terminal to answer their asks.
	o := u.must(repo, readme(`tai compare --script terse=s/terse.yaml --script verbose=s/verbose.yaml --script wrong=s/wrong.yaml --approve all --check "test -f LICENSE" --diff terse,verbose "add a LICENSE"`))
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^AGENT +CHECK +FILES +\+/- +TOKENS +COST +TIME +DENIALS +STATUS$`),
		regexp.MustCompile(`(?m)^terse +pass +1 +\+1 -0 +1200 +0\.012 .* done$`),
		regexp.MustCompile(`(?m)^verbose +pass +2 +\+4 -0 +2500 `),
		regexp.MustCompile(`(?m)^wrong +FAIL +1 +\+1 -0 +900 `),
		regexp.MustCompile(`\+\+\+ b/NOTICE`), // the diff terse..verbose
	} {
		if !want.MatchString(o.stdout) {
			t.Errorf("want %s in:\n%s", want, o)
		}
	}
	m := regexp.MustCompile(`keep it: tai compare pick (\S+) terse`).FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("no pick suggested:\n%s", o)
	}
	o = u.must(repo, readme(`tai compare pick RUN terse`), "RUN", m[1])
	if !strings.Contains(o.stdout, "picked terse") {
		t.Errorf("pick:\n%s", o)
	}
	u.git(repo, "cat-file", "-e", "tai-fleet/"+m[1]+":LICENSE")
	if o := u.sh(repo, "git cat-file -e tai-fleet/"+m[1]+":NOTICE"); o.code == 0 {
		t.Errorf("verbose's NOTICE is in the target: only terse was picked")
	}
}
