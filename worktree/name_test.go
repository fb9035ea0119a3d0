package worktree

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// ValidName is the expression it replaced, plus its three extra rules.
func TestValidNameIsTheExpression(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)
	want := func(s string) bool {
		return re.MatchString(s) && !strings.Contains(s, "..") && !strings.HasSuffix(s, ".lock") && !strings.HasSuffix(s, ".")
	}
	cases := []string{"", "a", "A9", "9", "-a", "_a", ".a", "a-b_c.d", "a..b", "a.lock", "a.", "a/b", "a b", "é", "a\x00",
		strings.Repeat("a", 100), strings.Repeat("a", 101), "run-20261201", "x.lockx"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aZ09_.-/ é\x00"
	for range 5000 {
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		if got := ValidName(s); got != want(s) {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want(s))
		}
	}
}
