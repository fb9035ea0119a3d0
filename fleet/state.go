package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/worktree"
)

// TaskStatus is where a task is in its life.
type TaskStatus string

// Task statuses.
const (
	StatusPending  TaskStatus = "pending"
	StatusWaiting  TaskStatus = "waiting"  // ready, waiting for a slot or its budget reservation
	StatusRunning  TaskStatus = "running"  // the agent is working
	StatusAsking   TaskStatus = "asking"   // the agent asked a question; the answerer or a human is on it
	StatusDone     TaskStatus = "done"     // the agent finished; not merged yet
	StatusMerged   TaskStatus = "merged"   // its branch is in the target
	StatusFailed   TaskStatus = "failed"   // the agent failed, or the check
	StatusConflict TaskStatus = "conflict" // its branch could not be rebased onto the target
	StatusRefused  TaskStatus = "refused"  // its budget reservation was refused
	StatusBudget   TaskStatus = "budget"   // stopped at its hard budget limit (partial work kept)
	StatusBlocked  TaskStatus = "blocked"  // asked a question nobody could answer
	StatusSkipped  TaskStatus = "skipped"  // a dependency did not succeed
	StatusParked   TaskStatus = "parked"   // its account is at a usage limit: waiting for the reset, its session kept
	StatusCanceled TaskStatus = "cancelled"
)

// TaskStatuses lists every task status, in a task's life order.
var TaskStatuses = []TaskStatus{StatusPending, StatusWaiting, StatusRunning, StatusAsking, StatusParked, StatusDone, StatusMerged, StatusFailed,
	StatusConflict, StatusRefused, StatusBudget, StatusBlocked, StatusSkipped, StatusCanceled}

// RunStatus is where a fleet run is in its life.
type RunStatus string

// Run statuses.
const (
	RunRunning     RunStatus = "running"
	RunDone        RunStatus = "done"   // every task succeeded
	RunFailed      RunStatus = "failed" // a task did not (exit code says how)
	RunInterrupted RunStatus = "interrupted"
	RunParked      RunStatus = "parked" // tasks wait for their account's reset, past the plan's quota: budget (exit 75)
)

// RunStatuses lists every run status.
var RunStatuses = []RunStatus{RunRunning, RunDone, RunFailed, RunInterrupted, RunParked}

// succeeded: dependents may start.
func succeeded(s TaskStatus) bool { return s == StatusMerged || s == StatusDone }

// CheckResult is a task's score under merge: false: the plan's check run,
// confined, in its worktree.
type CheckResult struct {
	Passed   bool   `json:"passed"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Output   string `json:"output,omitempty"` // the end of its output, when it failed
}

// QA is one question a task asked and its answer.
type QA struct {
	Question  string `json:"question"`
	Answer    string `json:"answer,omitempty"`
	DecidedBy string `json:"decided_by"` // answerer | human | none
}

// TaskState is one task's persisted state.
type TaskState struct {
	ID            string             `json:"id"`
	Agent         string             `json:"agent"`
	Status        TaskStatus         `json:"status"`
	Reason        string             `json:"reason,omitempty"`
	ExitCode      int                `json:"exit_code"`
	Attempts      int                `json:"attempts"`
	Usage         Usage              `json:"usage"`
	Branch        string             `json:"branch,omitempty"`
	Worktree      string             `json:"worktree,omitempty"`
	Base          string             `json:"base,omitempty"`
	Head          string             `json:"head,omitempty"`
	SessionID     string             `json:"session_id,omitempty"`
	Message       string             `json:"message,omitempty"`
	Diff          *worktree.DiffStat `json:"diff,omitempty"`
	Check         *CheckResult       `json:"check,omitempty"` // a plan with merge: false: the check's run in its worktree
	Questions     []QA               `json:"questions,omitempty"`
	ConflictFiles []string           `json:"conflict_files,omitempty"`
	// Account is whose usage limit the task spends (see AccountPark).
	Account string `json:"account,omitempty"`
	// Park is the session a parked task resumes at the reset.
	Park      *TaskPark `json:"park,omitempty"`
	Started   time.Time `json:"started,omitzero"`
	Finished  time.Time `json:"finished,omitzero"`
	ElapsedMS int64     `json:"elapsed_ms"`
}

// State is a fleet run's persisted state: $XDG_STATE_HOME/tai/fleet/<run>/state.json.
type State struct {
	Version  int                   `json:"version"`
	Run      string                `json:"run"`
	Plan     string                `json:"plan"` // the copy in the run directory
	PlanFrom string                `json:"plan_from"`
	Repo     string                `json:"repo"`
	Base     string                `json:"base"`
	Target   string                `json:"target"`
	Status   RunStatus             `json:"status"`
	ExitCode int                   `json:"exit_code"`
	PID      int                   `json:"pid"`
	Created  time.Time             `json:"created"`
	Updated  time.Time             `json:"updated"`
	Resumes  int                   `json:"resumes"`
	Usage    Usage                 `json:"usage"`
	Order    []string              `json:"order"`
	Tasks    map[string]*TaskState `json:"tasks"`
	// Parks are the accounts parked now, with their reset times: a
	// coordinator that dies while they are parked resumes with the same
	// timers.
	Parks map[string]*AccountPark `json:"parks,omitempty"`
	// QuotaResumes and QuotaWaitedMS are what the plan's quota: budget
	// has spent: the parks released, and how long they lasted in all.
	QuotaResumes  int   `json:"quota_resumes,omitempty"`
	QuotaWaitedMS int64 `json:"quota_waited_ms,omitempty"`
}

// RunDir is where a fleet run keeps its state, plan copy and audit log:
// $XDG_STATE_HOME/tai/fleet/<run> (~/.local/state when unset or relative).
func RunDir(run string) string {
	return statedir.Dir("fleet", filepath.Base(run))
}

// store saves a State atomically on every change. The first write that
// fails is kept (err): the fleet must not go on merging what it cannot
// record.
type store struct {
	path   string
	now    func() time.Time
	write  func(path string, data []byte) error // default worktree.WriteFileAtomic
	onFail func(error)                          // called once, on the first failed write
	saved  func(State)                          // if set, told of each save (a copy)
	mu     sync.Mutex
	st     *State
	failed error
}

func (s *store) update(fn func(st *State)) error {
	s.mu.Lock()
	fn(s.st)
	s.st.Updated = s.now().UTC()
	b, err := json.MarshalIndent(s.st, "", "  ")
	if err == nil {
		write := s.write
		if write == nil {
			write = func(p string, d []byte) error { return worktree.WriteFileAtomic(p, d, 0o600) }
		}
		err = write(s.path, append(b, '\n'))
	}
	var first func(error)
	if err != nil {
		err = fmt.Errorf("fleet state: %w", err)
		if s.failed == nil {
			s.failed, first = err, s.onFail
		}
	}
	s.mu.Unlock()
	if first != nil {
		first(err)
	}
	if err == nil && s.saved != nil {
		s.saved(s.snapshot())
	}
	return err
}

// err is the first state write that failed, if any.
func (s *store) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// task returns a copy of a task's state.
func (s *store) task(id string) TaskState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.st.Tasks[id]
}

func (s *store) snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *s.st
	c.Tasks = map[string]*TaskState{}
	for k, v := range s.st.Tasks {
		t := *v
		c.Tasks[k] = &t
	}
	if s.st.Parks != nil {
		c.Parks = map[string]*AccountPark{}
		for k, v := range s.st.Parks {
			p := *v
			c.Parks[k] = &p
		}
	}
	return c
}

// LoadState reads a run's state.
func LoadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("fleet run %s: no state (%w)", filepath.Base(dir), err)
		}
		return nil, fmt.Errorf("fleet state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("fleet state %s: %w", dir, err)
	}
	return &st, nil
}
