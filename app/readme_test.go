package app

import (
	"os"
	"regexp"
	"testing"

	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/policy"
)

// The README's examples are real: its plan and policy file must parse.
func TestReadmeExamples(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	plans := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(plans) == 0 {
		t.Fatal("no plan example in the README")
	}
	for _, p := range plans {
		if _, err := fleet.ParsePlan([]byte(p[1]), "README.md"); err != nil {
			t.Errorf("README plan: %v", err)
		}
	}
	pols := regexp.MustCompile("(?s)```toml\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(pols) == 0 {
		t.Fatal("no policy example in the README")
	}
	for _, p := range pols {
		if _, err := policy.Parse("README.md", []byte(p[1])); err != nil {
			t.Errorf("README policy: %v", err)
		}
	}
}
