package app

import (
	"context"
	"testing"
)

// tai run drives one agent: it runs Go code on one thread, unless the
// environment names GOMAXPROCS.
func TestRunOneThreadUnlessGOMAXPROCS(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []int
	}{
		{"unset", map[string]string{"XDG_STATE_HOME": t.TempDir()}, []int{1}},
		{"set", map[string]string{"XDG_STATE_HOME": t.TempDir(), "GOMAXPROCS": "4"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			std, _, _ := testIO(tc.env)
			var got []int
			std.SetProcs = func(n int) { got = append(got, n) }
			// A bad output mode: the run fails before any agent starts.
			if err := Run(context.Background(), RunFlags{Agent: "builtin", Cwd: t.TempDir(), Output: "bogus"}, []string{"hi"}, std); err == nil {
				t.Fatal("a bad --output ran")
			}
			if len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
				t.Fatalf("SetProcs calls %v, want %v", got, tc.want)
			}
		})
	}
}
