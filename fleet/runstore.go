package fleet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/statedir"
)

// RunStore reads fleet runs back, for `tai fleet status`, `list` and
// `logs`: FileStore for this host's runs (their state directories),
// remote.Store for runs over NATS (JetStream's buckets and events
// stream). One reader, so that both show a run alike.
type RunStore interface {
	// Runs is every run, newest first.
	Runs(ctx context.Context) ([]RunInfo, error)
	// View is where run stands.
	View(ctx context.Context, run string) (RunView, error)
	// Frames calls frame with each of run's stream-json frames (cap.md
	// §7) in order; follow goes on with a live run's until it ends.
	Frames(ctx context.Context, run string, follow bool, frame func([]byte)) error
}

// RunInfo is one row of `tai fleet list`.
type RunInfo struct {
	Run     string         `json:"run"`
	Status  string         `json:"status"` // running | done | failed | interrupted | submitted | ...
	Live    bool           `json:"live"`   // its process is running (tai top sees it)
	Tasks   int            `json:"tasks"`
	Counts  map[string]int `json:"counts"`
	Tokens  int64          `json:"tokens"`
	Target  string         `json:"target"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
}

// RunView is where a run stands.
type RunView struct {
	// State is the run's last saved state; nil for a run submitted to a
	// hub whose coordinator has not taken it yet.
	State *State
	// Status is State's status as people read it: "interrupted (resume
	// with: ...)" for a run whose process died, "running (coordinated by
	// the hub)" for a submitted one.
	Status string
	// Audit is the run's audit log on this host ("": none here).
	Audit string
	// Submitted is when the run was submitted (runs over NATS).
	Submitted time.Time
}

// ErrNoRuns is Latest's error when a store holds no run.
var ErrNoRuns = errors.New("no fleet runs")

// Latest is the store's newest run.
func Latest(ctx context.Context, s RunStore) (string, error) {
	runs, err := s.Runs(ctx)
	if err != nil {
		return "", err
	}
	if len(runs) == 0 {
		return "", ErrNoRuns
	}
	return runs[0].Run, nil
}

// InfoOf is a run's row: its state's counts and usage.
func InfoOf(st *State) RunInfo {
	info := RunInfo{Run: st.Run, Status: string(st.Status), Tasks: len(st.Order), Counts: map[string]int{}, Tokens: st.Usage.Tokens,
		Target: st.Target, Created: st.Created, Updated: st.Updated}
	for _, id := range st.Order {
		if t := st.Tasks[id]; t != nil {
			info.Counts[string(t.Status)]++
		}
	}
	return info
}

// SortRuns orders runs newest first (then by name, the later first).
func SortRuns(runs []RunInfo) {
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].Created.Equal(runs[j].Created) {
			return runs[i].Created.After(runs[j].Created)
		}
		return runs[i].Run > runs[j].Run
	})
}

// FramesFile is where a run's directory keeps its stream-json frames.
const FramesFile = "frames.jsonl"

// FileStore is this host's runs: their directories under tai's state.
type FileStore struct{}

var _ RunStore = FileStore{}

// Runs reads every run's state; a run that never saved one is left out.
func (FileStore) Runs(context.Context) ([]RunInfo, error) {
	dir := statedir.Dir("fleet")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing fleet runs: %w", err)
	}
	var out []RunInfo
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		st, err := LoadState(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		info := InfoOf(st)
		if st.Status == RunRunning {
			info.Live = st.PID != 0 && alive(st.PID)
			if !info.Live {
				info.Status = string(RunInterrupted)
			}
		}
		out = append(out, info)
	}
	SortRuns(out)
	return out, nil
}

// View reads run's state; a run whose process died is interrupted.
func (FileStore) View(_ context.Context, run string) (RunView, error) {
	st, err := LoadState(RunDir(run))
	if err != nil {
		return RunView{}, exitcode.With(exitcode.Usage, err)
	}
	status := string(st.Status)
	if st.Status == RunRunning && st.PID != 0 && !alive(st.PID) {
		status = "interrupted (resume with: tai fleet resume " + run + ")"
	}
	return RunView{State: st, Status: status, Audit: filepath.Join(RunDir(run), "audit.jsonl")}, nil
}

// Frames reads the run's frames file; follow reads a live run's feed
// instead, from its first frame until the run ends.
func (FileStore) Frames(ctx context.Context, run string, follow bool, frame func([]byte)) error {
	dir := RunDir(run)
	if _, err := LoadState(dir); err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if follow {
		if ep, ok := liveFeed(run); ok {
			c := feed.Dial(ep.Path)
			defer c.Close()
			_, err := c.Events(ctx, 0, func(ev feed.Event) error {
				if ev.Name == "" {
					frame(ev.Data)
				}
				return nil
			})
			if err != nil && !errors.Is(err, feed.ErrEnded) && ctx.Err() == nil {
				return err
			}
			return nil
		}
	}
	fh, err := os.Open(filepath.Join(dir, FramesFile))
	if err != nil {
		return fmt.Errorf("fleet run %s has no frames (a run from before tai kept them?): %w", run, err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		frame(sc.Bytes())
	}
	return sc.Err()
}

func liveFeed(run string) (feed.Endpoint, bool) {
	eps, _ := feed.List(feed.DefaultDir())
	for _, ep := range eps {
		if ep.Run == run {
			return ep, true
		}
	}
	return feed.Endpoint{}, false
}

func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

// Fleet stream-json frame types (cap.md §7).
const (
	EventFrameType  = "fleet.event"
	ResultFrameType = "fleet.result"
)

// TaskFrame is a task's session frame in a fleet's stream: the cap.md
// frame tagged with the run and the task. Its seq is the fleet stream's.
type TaskFrame struct {
	Run  string `json:"run"`
	Task string `json:"task"`
	driver.Event
}

// EventFrame is the fleet's own progress: a task started, finished,
// merged, hit a conflict or its budget, asked...
type EventFrame struct {
	Type   string    `json:"type"` // fleet.event
	Run    string    `json:"run"`
	Seq    uint64    `json:"seq"`
	Ts     time.Time `json:"ts"`
	Event  string    `json:"event"` // Event's kind: started | finished | failed | merged | conflict | budget | asked | answered | ...
	Task   string    `json:"task,omitempty"`
	Detail string    `json:"detail,omitempty"`
	Status string    `json:"status,omitempty"` // the task's status after the event
	Usage  Usage     `json:"usage"`            // the fleet's usage so far
}
