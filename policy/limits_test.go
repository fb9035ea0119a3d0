package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/tai-dev/tai/sandbox"
)

func TestLimits(t *testing.T) {
	def := sandbox.DefaultLimits()
	for _, tc := range []struct {
		name, file string
		want       sandbox.Limits
		err        string
	}{
		{"none: the defaults", "", def, ""},
		{"both", "limits = {pids = 256, memory = \"4GiB\"}\n", sandbox.Limits{Pids: 256, Memory: 4 << 30}, ""},
		{"a table, memory in bytes", "[limits]\nmemory = 1048576\n", sandbox.Limits{Pids: def.Pids, Memory: 1 << 20}, ""},
		{"off", "limits = {pids = \"off\", memory = \"off\"}\n", sandbox.Limits{}, ""},
		{"zero", "limits = {pids = 0, memory = 0}\n", sandbox.Limits{}, ""},
		{"unknown key", "limits = {cpu = 2}\n", sandbox.Limits{}, `unknown key "cpu"`},
		{"negative", "limits = {pids = -1}\n", sandbox.Limits{}, "negative"},
		{"bad size", "limits = {memory = \"lots\"}\n", sandbox.Limits{}, "limits.memory: memory \"lots\""},
		{"pids a word", "limits = {pids = \"many\"}\n", sandbox.Limits{}, "limits.pids: want a number"},
		{"not a table", "limits = 5\n", sandbox.Limits{}, "limits must be a table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("p.toml", []byte(tc.file))
			if tc.err != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || ce.Line != 1 || !strings.Contains(ce.Msg, tc.err) {
					t.Fatalf("err %v, want line 1 and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Limits.Resolve(); got != tc.want {
				t.Fatalf("limits %+v, want %+v", got, tc.want)
			}
		})
	}
}
