package builtin

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README lists every script step the built-in agent plays, and no
// other.
func TestReadmeListsEveryStep(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)whose (?:steps|format) \((.*?)\) (?:are|is) documented in`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the README's list of the built-in agent's steps (\"whose steps (...) are documented in\") is gone")
	}
	listed := regexp.MustCompile(`[a-z_]+`).FindAllString(strings.ReplaceAll(string(m[1]), "and fault steps:", ""), -1)
	slices.Sort(listed)
	want := slices.Clone(stepKinds)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("the README lists %v\nthe agent plays %v", listed, want)
	}
}
