package policy

import (
	"strings"
	"testing"
)

func TestElicitRules(t *testing.T) {
	tests := []struct {
		toml, err string
	}{
		{"[[elicit]]\nid = \"a\"\nmessage = \"*db*\"\n[elicit.answers]\nname = \"x\"\nport = 1\ntags = [\"a\"]\n", ""},
		{"[[elicit]]\naction = \"maybe\"\n", `"maybe" is not accept, decline or cancel`},
		{"[[elicit]]\nanswer = 1\n", "unknown key"},
		{"[[elicit]]\n[elicit.answers]\nx = [1]\n", "a list takes strings only"},
		{"elicit = 3\n", "write each answer as [[elicit]]"},
	}
	for _, tc := range tests {
		c, err := Parse("p.toml", []byte(tc.toml))
		if tc.err == "" {
			if err != nil || len(c.Elicit) != 1 || c.Elicit[0].Answers["port"] != int64(1) {
				t.Errorf("%q: %v %+v", tc.toml, err, c.Elicit)
			}
			if !c.Elicit[0].Matches("form", "Which DB?", "") || c.Elicit[0].Matches("form", "other", "") {
				t.Errorf("message glob does not match case-insensitively")
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: err %v, want %q", tc.toml, err, tc.err)
		}
	}
}
