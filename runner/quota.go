package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/driver/acp"
	"github.com/tai-dev/tai/quota"
	"github.com/tai-dev/tai/worktree"
)

// QuotaOptions say what a run does when the agent hits its usage limit.
type QuotaOptions struct {
	// Account is whose limit it is (agent and credential hash), for the
	// result and the audit log.
	Account quota.Account
	// Wait, when > 0, waits up to that long in all for the limit to reset
	// and resumes the same session with ContinuePrompt; 0 ends the run
	// parked at the first limit.
	Wait time.Duration
	// MaxResumes bounds the resumes after a limit (0: DefaultMaxResumes).
	MaxResumes int
	// ParkReason is why a run that does not wait parks, in its caller's
	// words (a fleet's); default: how to resume it with tai run.
	ParkReason string
	// Backoff and BackoffMax space the resumes when the agent gave no
	// reset time (quota.Backoff). Defaults 1m and 30m.
	Backoff, BackoffMax time.Duration
	// RetryGrace is how long a turn may stay on an agent's notice that it
	// retries a request refused at a 429 (quota.FromRetryNotice) before
	// tai cancels it and parks (default DefaultRetryGrace): a short rate
	// limit clears within it, while an agent waiting out a usage limit's
	// Retry-After would hold the turn for hours.
	RetryGrace time.Duration
}

// DefaultRetryGrace is QuotaOptions.RetryGrace unless set.
const DefaultRetryGrace = 30 * time.Second

// DefaultMaxResumes is how many times a run resumes after a limit unless
// told otherwise.
const DefaultMaxResumes = 3

// ContinuePrompt is the prompt that resumes a session after its limit reset.
const ContinuePrompt = "The usage limit that stopped you has reset. Continue the task where you left off."

// Parked is what a run that ended at a usage limit reports: when to come
// back, for which account, and which session to resume.
type Parked struct {
	quota.Limit
	Account quota.Account `json:"account"`
	// Session is the session to resume (tai run --resume SESSION).
	Session string `json:"session,omitempty"`
	// Resumes is how many times this run already resumed after a limit.
	Resumes int `json:"resumes"`
	// Waited is how long it waited for resets in all, in milliseconds.
	WaitedMS int64 `json:"waited_ms"`
	// Reason says why the run did not wait (longer).
	Reason string `json:"reason"`
}

// parkedError ends a run parked: the limit, and why it did not wait.
type parkedError struct {
	limit  *quota.Error
	parked Parked
}

func (e *parkedError) Error() string { return e.limit.Error() + "; " + e.parked.Reason }
func (e *parkedError) Unwrap() error { return e.limit }

// quotaTurn runs a turn; on a usage limit it waits for the reset and
// resumes the same session, within QuotaOptions' bounds, else ends the run
// parked. An agent that died while the run waited is started again
// (relaunch): *sess is then the new session.
func (r *run) quotaTurn(ctx context.Context, sess *Session, prompt []driver.Content, last bool) error {
	q := r.o.Quota
	maxResumes := q.MaxResumes
	if maxResumes <= 0 {
		maxResumes = DefaultMaxResumes
	}
	var waited time.Duration
	err := r.turn(ctx, *sess, prompt, last)
	for resumes := 0; ; resumes++ {
		qe, ok := quota.As(err)
		if !ok {
			return err
		}
		p := Parked{Limit: qe.Limit, Account: q.Account, Session: (*sess).ID(), Resumes: resumes, WaitedMS: waited.Milliseconds()}
		now := r.o.Clock.Now()
		wait := p.ResetsAt.Sub(now)
		if p.ResetsAt.IsZero() {
			base, top := q.Backoff, q.BackoffMax
			if base <= 0 {
				base = time.Minute
			}
			if top <= 0 {
				top = 30 * time.Minute
			}
			wait = quota.Backoff(resumes, base, top)
		}
		wait = max(wait, 0)
		switch {
		case q.Wait <= 0 && q.ParkReason != "":
			p.Reason = q.ParkReason
		case q.Wait <= 0 && p.Session == "":
			// An A2A agent refused the first prompt before it named a context.
			p.Reason = "without --wait-quota the run parks; the agent named no session before its limit: run the prompt again"
		case q.Wait <= 0 && !resumable((*sess).Capabilities()):
			// A PTY TUI: its session lives as long as its process.
			p.Reason = "without --wait-quota the run parks; the agent cannot resume its session in a new run (it can neither load nor resume one): after the reset run the prompt again, or pass --wait-quota to wait in the live session"
		case q.Wait <= 0:
			p.Reason = "without --wait-quota the run parks: resume it with tai run --resume " + p.Session
		case resumes >= maxResumes:
			p.Reason = fmt.Sprintf("the run already resumed %d time(s), its limit (--max-resumes)", resumes)
		case waited+wait > q.Wait:
			p.Reason = fmt.Sprintf("the reset is %s away, past what --wait-quota=%s leaves (%s)", wait.Round(time.Second), q.Wait, (q.Wait - waited).Round(time.Second))
		}
		if p.Reason != "" {
			return &parkedError{limit: qe, parked: p}
		}
		r.auditQuota(audit.KindQuotaWait, (*sess).ID(), map[string]any{
			"limit": qe.Limit, "account": q.Account, "wait_ms": wait.Milliseconds(), "resume": resumes + 1,
		})
		if wait > 0 {
			t := r.o.Clock.NewTimer(wait, "runner", "quota-wait")
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return context.Cause(ctx)
			}
		}
		waited += wait
		r.auditQuota(audit.KindQuotaResume, (*sess).ID(), map[string]any{"resume": resumes + 1, "waited_ms": waited.Milliseconds()})
		err = r.resumeTurn(ctx, sess, prompt, last)
	}
}

// resumeTurn sends the continue prompt to the session after its limit
// reset. An agent that died meanwhile (gone before the prompt, or dying
// as it got it) is started again and its session reloaded (relaunch),
// once per resume.
func (r *run) resumeTurn(ctx context.Context, sess *Session, task []driver.Content, last bool) error {
	if !exited(*sess) {
		err := r.turn(ctx, *sess, []driver.Content{driver.TextContent(ContinuePrompt)}, last)
		var exit *driver.AgentExitError
		if _, limit := quota.As(err); limit || !errors.As(err, &exit) {
			return err
		}
	}
	next, prompt, err := r.relaunch(ctx, *sess, task)
	if err != nil {
		return err
	}
	*sess = next
	return r.turn(ctx, next, prompt, last)
}

func exited(s Session) bool {
	select {
	case <-s.Exited():
		return true
	default:
		return false
	}
}

// How a relaunched agent took its session back (Result.Resumed).
type Resumed string

// The ways.
const (
	ResumedLoad       Resumed = "session/load"   // ACP: the history replayed
	ResumedResume     Resumed = "session/resume" // ACP: without the replay
	ResumedFlag       Resumed = "--resume"       // stream-json and terminal agents: the CLI's own
	ResumedNewSession Resumed = "new_session"    // it could not: a new session told what was done
)

// resumeWay is how an agent with caps reloads a session: the ACP driver
// prefers session/resume unless the replay is asked for (driver/acp).
func resumeWay(d driver.Name, caps driver.Capabilities, replay bool) Resumed {
	switch {
	case !caps.LoadSession && !caps.ResumeSession:
		return ResumedNewSession
	case d != acp.Name:
		return ResumedFlag
	case caps.ResumeSession && !(replay && caps.LoadSession):
		return ResumedResume
	default:
		return ResumedLoad
	}
}

// relaunch starts the agent again after it died while the run waited for
// its limit to reset, and takes the session back with the agent's own
// resume (session/load or session/resume, --resume); where the agent
// cannot (no such capability, or it no longer has the session) it starts
// a new session told what was done so far: the task and the workspace's
// diff. It says which in the result and the audit log, and returns the
// session and the prompt that continues the work.
func (r *run) relaunch(ctx context.Context, dead Session, task []driver.Content) (Session, []driver.Content, error) {
	old := dead.ID()
	way := resumeWay(r.driverName(), dead.Capabilities(), r.launch.LoadReplay)
	r.closeSession(dead) // reaps it; what it said is in the log
	l := r.launch
	l.ForkID = ""
	var why string
	var sess Session
	var err error
	if way != ResumedNewSession {
		l.ResumeID = old
		sess, err = r.start(ctx, l)
		switch {
		case errors.Is(err, driver.ErrNoSession), errors.Is(err, driver.ErrUnsupported):
			why = err.Error()
			way = ResumedNewSession
		case err != nil:
			return nil, nil, r.interrupted(ctx, fmt.Errorf("%s exited while the run waited for its limit; starting it again to resume session %s: %w", r.o.Agent, old, err))
		}
	} else {
		why = r.o.Agent + " can neither load nor resume a session"
	}
	prompt := []driver.Content{driver.TextContent(ContinuePrompt)}
	if way == ResumedNewSession {
		l.ResumeID = ""
		if sess, err = r.start(ctx, l); err != nil {
			return nil, nil, r.interrupted(ctx, fmt.Errorf("%s exited while the run waited for its limit; starting it again: %w", r.o.Agent, err))
		}
		prompt = r.takeOverPrompt(ctx, task)
	}
	if r.modes != nil {
		r.modes.use(sess)
	}
	if err := r.configure(ctx, sess); err != nil {
		r.closeSession(sess)
		return nil, nil, r.interrupted(ctx, err)
	}
	r.setLive(sess)
	r.col.resumed(way)
	d := map[string]any{"session": old, "new_session": sess.ID(), "resumed": way, "reason": "the agent exited while the run waited for its limit to reset"}
	if why != "" {
		d["why_new"] = why
	}
	r.auditQuota(audit.KindQuotaRelaunch, sess.ID(), d)
	r.o.Logger.Info("relaunched the agent after its limit", "agent", r.o.Agent, "session", old, "resumed", way)
	return sess, prompt, nil
}

// takeOverPrompt is the first prompt of a new session that takes over a
// session its agent lost: the task and the workspace's diff, then the
// task's other blocks (files).
func (r *run) takeOverPrompt(ctx context.Context, task []driver.Content) []driver.Content {
	var text []string
	var rest []driver.Content
	for _, c := range task {
		if c.Type == "text" {
			text = append(text, c.Text)
		} else {
			rest = append(rest, c)
		}
	}
	diff := workspaceDiff(ctx, r.launch.Cwd)
	return append([]driver.Content{driver.TextContent(ResumePrompt(strings.Join(text, "\n"), diff))}, rest...)
}

// workspaceDiff is what was done in dir so far, if it is a git work tree:
// its diff against HEAD and the files git does not track yet; "" for none.
func workspaceDiff(ctx context.Context, dir string) string {
	// Repo: the config's filter drivers (the agent may have written
	// them) are turned off, as in every git call tai makes.
	g := &worktree.Git{Repo: dir}
	patch, err := g.WorkDiff(ctx, dir, "HEAD", maxTakeOverDiff)
	if err != nil {
		return "(the workspace is not a git work tree with a commit: no diff)"
	}
	return patch
}

// maxTakeOverDiff bounds the diff a takeover prompt carries.
const maxTakeOverDiff = 16 << 10

// ResumePrompt is the prompt of a new session that takes over a task
// whose session cannot be resumed after a usage limit: the task, and what
// was done so far (diff: the workspace's diff, "" for none).
func ResumePrompt(task, diff string) string {
	if strings.TrimSpace(diff) == "" {
		diff = "(no changes yet)"
	}
	return fmt.Sprintf("%s\n\n---\nA usage limit stopped an earlier session on this task; this is a new one. What was done so far (the diff of your workspace):\n%s\n\nContinue the task from there.", task, diff)
}

func (r *run) auditQuota(kind, session string, v any) {
	if r.audit != nil {
		r.audit.append(kind, session, v)
	}
}

// resumable says whether a new run can take the session back (tai run
// --resume).
func resumable(c driver.Capabilities) bool { return c.LoadSession || c.ResumeSession }
