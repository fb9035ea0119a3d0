package remote

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
)

// Store reads a finished run over NATS back as FileStore reads a local
// one: its row, its state, and its frames (the coordinator's events and
// the worker's task frames), also when following (the run has ended:
// the replay ends); an unknown run is a usage error naming it.
func TestStoreReadsARunBack(t *testing.T) {
	h := startHub(t)
	stop := startWorkers(t, h.url, 1, 5*time.Second)
	defer stop()
	_, plan := planRepo(t, map[string]string{
		"s.yaml":    "steps:\n  - write: {path: s.txt, content: \"s\\n\"}\n  - text: wrote it\n",
		"plan.yaml": "policy: {approve: all}\ntasks:\n  - {id: s, script: s.yaml, prompt: go}\n",
	})
	st, _ := coordinate(t, h.url, plan, "st", nil)
	if st.ExitCode != 0 {
		t.Fatalf("exit %d: %+v", st.ExitCode, st.Tasks)
	}
	ctx := context.Background()
	var s fleet.RunStore = Store{Bus: openBus(t, h.url, "reader")}

	runs, err := s.Runs(ctx)
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %+v %v", runs, err)
	}
	if r := runs[0]; r.Run != "st" || r.Status != string(fleet.RunDone) || r.Tasks != 1 || r.Counts["merged"] != 1 || r.Live || r.Target != st.Target {
		t.Errorf("row %+v", r)
	}
	v, err := s.View(ctx, "st")
	if err != nil || v.State == nil || v.Status != string(fleet.RunDone) || v.Audit != "" || v.State.Tasks["s"].Status != fleet.StatusMerged {
		t.Errorf("view %+v %v", v, err)
	}

	for _, follow := range []bool{false, true} {
		var merged, said bool
		err := s.Frames(ctx, "st", follow, func(b []byte) {
			var f struct {
				Type, Task, Event string
				Message           *struct{ Text string }
			}
			if json.Unmarshal(b, &f) != nil {
				t.Errorf("a frame is not JSON: %s", b)
			}
			merged = merged || (f.Type == fleet.EventFrameType && f.Task == "s" && f.Event == string(fleet.EventMerged))
			said = said || (f.Task == "s" && f.Message != nil && strings.Contains(f.Message.Text, "wrote it"))
		})
		if err != nil || !merged || !said {
			t.Errorf("frames (follow %v): err %v, merged event %v, the agent's message %v", follow, err, merged, said)
		}
	}

	for name, read := range map[string]func() error{
		"view":   func() error { _, err := s.View(ctx, "nosuch"); return err },
		"frames": func() error { return s.Frames(ctx, "nosuch", false, func([]byte) {}) },
	} {
		if err := read(); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "nosuch") {
			t.Errorf("%s of an unknown run: %v, want a usage error naming it", name, err)
		}
	}
}
