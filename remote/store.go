package remote

import (
	"context"
	"encoding/json"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/fleet"
)

// Store is the runs on a NATS server, read back as fleet.FileStore reads
// this host's: their records (tai_runs), the state their coordinators
// publish (tai_state) and their events stream.
type Store struct{ Bus *Bus }

var _ fleet.RunStore = Store{}

// Runs is every run on the server, newest first; a submitted run that no
// coordinator has taken yet is "submitted".
func (s Store) Runs(ctx context.Context) ([]fleet.RunInfo, error) {
	recs, err := ListRuns(ctx, s.Bus)
	if err != nil {
		return nil, err
	}
	var out []fleet.RunInfo
	for _, rec := range recs {
		info := fleet.RunInfo{Run: rec.Run, Status: "submitted", Counts: map[string]int{}, Target: rec.Target, Created: rec.Created}
		if _, st, err := LoadRun(ctx, s.Bus, rec.Run); err == nil && st != nil {
			info = fleet.InfoOf(st)
			info.Run, info.Target, info.Created = rec.Run, rec.Target, rec.Created
			info.Live = rec.Finished.IsZero() && st.Status == fleet.RunRunning
		}
		out = append(out, info)
	}
	fleet.SortRuns(out)
	return out, nil
}

// View is the run's published state.
func (s Store) View(ctx context.Context, run string) (fleet.RunView, error) {
	rec, st, err := LoadRun(ctx, s.Bus, run)
	if err != nil {
		return fleet.RunView{}, err
	}
	v := fleet.RunView{State: st, Submitted: rec.Created}
	if st != nil {
		v.Status = string(st.Status)
		if rec.Submitted && st.Status == fleet.RunRunning {
			v.Status = "running (coordinated by the hub)"
		}
	}
	return v, nil
}

// Frames replays the run's events stream as a local run's frames: the
// workers' task frames and the coordinator's events (whose worker.*
// events already say what the workers' own do); follow goes on until
// the run has ended.
func (s Store) Frames(ctx context.Context, run string, follow bool, frame func([]byte)) error {
	if _, _, err := LoadRun(ctx, s.Bus, run); err != nil {
		return err
	}
	var seq uint64
	return Events(ctx, s.Bus, run, follow, func(ev EventMsg) error {
		seq++
		var f any
		switch {
		case ev.Kind == KindFrame:
			var de driver.Event
			if json.Unmarshal(ev.Frame, &de) != nil {
				return nil
			}
			de.Seq = seq
			f = fleet.TaskFrame{Run: ev.Run, Task: ev.Task, Event: de}
		case ev.Worker != "":
			return nil
		default:
			f = fleet.EventFrame{Type: fleet.EventFrameType, Run: ev.Run, Seq: seq, Ts: ev.Time, Event: ev.Kind, Task: ev.Task, Detail: ev.Detail}
		}
		data, err := json.Marshal(f)
		if err != nil {
			return err
		}
		frame(data)
		if follow && ev.Kind == string(fleet.EventRunEnd) && ev.Task == "" {
			if rec, _, err := LoadRun(ctx, s.Bus, run); err == nil && !rec.Finished.IsZero() {
				return ErrStop
			}
		}
		return nil
	})
}
