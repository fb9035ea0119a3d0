package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckDepth(t *testing.T) {
	nested := func(n int) string {
		return "x = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n"
	}
	for _, tc := range []struct {
		name, text string
		line       int // 0: accepted
	}{
		{"flat", "approve = \"all\"\n[[rule]]\nallow = [\"read\"]\n", 0},
		{"at the bound", nested(MaxDepth), 0},
		{"over the bound", nested(MaxDepth + 1), 1},
		{"brackets in strings", "a = \"" + strings.Repeat("[", 40) + "\"\nb = '" + strings.Repeat("{", 40) + "'\n", 0},
		{"brackets in multi-line strings", "a = \"\"\"\n" + strings.Repeat("[", 40) + "\n\"\"\"\nb = '''\n" + strings.Repeat("{", 40) + "'''\n", 0},
		{"brackets in comments", "# " + strings.Repeat("[", 40) + "\n", 0},
		{"escaped quote", `a = "\"` + strings.Repeat("[", 40) + `"` + "\n", 0},
		{"line of the error", "a = 1\n\n" + "b = " + strings.Repeat("[", MaxDepth+1) + "\n", 3},
		{"arrays", "x = " + strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1) + "\n", 1},
	} {
		err := CheckDepth("p.toml", []byte(tc.text), MaxDepth)
		if tc.line == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Line != tc.line || !strings.Contains(err.Error(), "nest deeper") {
			t.Errorf("%s: %v, want an error at line %d", tc.name, err, tc.line)
		}
	}
}

// The files that took 1.5 GiB and 4.6 s (30 KB), and 2.6 GB (40 KB), to
// parse are refused by the pre-scan, before the decoder sees them.
func TestDeepPolicyRefusedBeforeParsing(t *testing.T) {
	for _, size := range []int{30 << 10, 40 << 10} {
		n := size / len("{a = }")
		text := "x = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n"
		_, err := Parse("deep.toml", []byte(text))
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "nest deeper than") {
			t.Fatalf("%d bytes: %v", len(text), err)
		}
	}
}
