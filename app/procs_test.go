package app

import (
	"context"
	"slices"
	"testing"

	"github.com/tai-dev/tai/driver"
)

// tai run drives one agent: it runs Go code on one thread once the agent
// streams (its streamEvents-th event), unless the environment names
// GOMAXPROCS.
func TestRunOneThreadOnceStreaming(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []int
	}{
		{"unset", map[string]string{}, []int{1}},
		{"set", map[string]string{"GOMAXPROCS": "4"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			std, _, _ := testIO(tc.env)
			var got []int
			o := RunOptions{IO: std, SetProcs: func(n int) { got = append(got, n) }}
			sink := o.oneAgentStreaming()
			for range streamEvents - 1 {
				sink.Emit(driver.Event{})
			}
			if got != nil {
				t.Fatalf("SetProcs calls %v before the agent streams", got)
			}
			for range 3 {
				sink.Emit(driver.Event{})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("SetProcs calls %v, want %v", got, tc.want)
			}
		})
	}
}

// A run that ends before its agent streams keeps its threads: the switch
// would cost it more than it could gain.
func TestRunFewEventsKeepsThreads(t *testing.T) {
	std, _, _ := testIO(map[string]string{"XDG_STATE_HOME": t.TempDir()})
	var got []int
	o := RunOptions{Flags: RunFlags{Agent: "builtin", Cwd: t.TempDir(), Output: "bogus"}, IO: std, SetProcs: func(n int) { got = append(got, n) }}
	// A bad output mode: the run fails before any agent starts.
	if err := Run(context.Background(), o, []string{"hi"}); err == nil {
		t.Fatal("a bad --output ran")
	}
	if got != nil {
		t.Fatalf("SetProcs calls %v", got)
	}
}
