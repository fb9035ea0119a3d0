package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/quota"
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
}

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
// parked.
func (r *run) quotaTurn(ctx context.Context, sess Session, prompt []driver.Content, last bool) error {
	q := r.o.Quota
	maxResumes := q.MaxResumes
	if maxResumes <= 0 {
		maxResumes = DefaultMaxResumes
	}
	var waited time.Duration
	err := r.turn(ctx, sess, prompt, last)
	for resumes := 0; ; resumes++ {
		qe, ok := quota.As(err)
		if !ok {
			return err
		}
		p := Parked{Limit: qe.Limit, Account: q.Account, Session: sess.ID(), Resumes: resumes, WaitedMS: waited.Milliseconds()}
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
		r.auditQuota(audit.KindQuotaWait, sess.ID(), map[string]any{
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
		r.auditQuota(audit.KindQuotaResume, sess.ID(), map[string]any{"resume": resumes + 1, "waited_ms": waited.Milliseconds()})
		err = r.turn(ctx, sess, []driver.Content{{Type: "text", Text: ContinuePrompt}}, last)
	}
}

func (r *run) auditQuota(kind, session string, v any) {
	if r.audit != nil {
		r.audit.append(kind, session, v)
	}
}
