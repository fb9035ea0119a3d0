package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/policy"
)

// BucketAsks holds the questions and permission asks of remote tasks
// until their coordinator answers: <run>.<task>.<attempt>.<n> → Ask. A
// bucket (not a request) so that an ask outlives a coordinator restart:
// a resumed coordinator's watch sees every open ask again.
const BucketAsks = "tai_asks"

// AskKind is what a remote task asks.
type AskKind string

// Ask kinds.
const (
	AskQuestion   AskKind = "question"   // the agent's question (a turn ending in one, or a form)
	AskPermission AskKind = "permission" // policy says ask a human
)

// Ask is a remote task's ask and, once Answered, its coordinator's reply.
type Ask struct {
	Kind    AskKind `json:"kind"`
	Run     string  `json:"run"`
	Task    string  `json:"task"`
	Attempt int     `json:"attempt"`
	Worker  string  `json:"worker"`
	// A question, with the task's work so far: Head (pushed as the
	// attempt's ref) and its patch against the task's base.
	Question   string                    `json:"question,omitempty"`
	Head       string                    `json:"head,omitempty"`
	Patch      string                    `json:"patch,omitempty"`
	Permission *driver.PermissionRequest `json:"permission,omitempty"`
	// Workspace is the task's worktree on the worker: the question's diff
	// names its files relative to it.
	Workspace string `json:"workspace,omitempty"`
	// Key is what the worker's policy remembers a permission's "always"
	// under (policy.MemoryKey, workspace-relative): the coordinator
	// remembers it for the run, as a local fleet's memory does.
	Key string `json:"key,omitempty"`

	Answered  bool          `json:"answered,omitempty"`
	Answer    string        `json:"answer,omitempty"`     // a question's
	DecidedBy string        `json:"decided_by,omitempty"` // answerer | human
	Verdict   policy.Answer `json:"verdict,omitempty"`    // a permission's
	Via       ask.Via       `json:"via,omitempty"`        // the channel a human answered on
	Usage     fleet.Usage   `json:"usage"`                // what the answerer spent
	Error     string        `json:"error,omitempty"`      // nobody could answer
	// Withdrawn: its worker gave it up before an answer came (its turn
	// was cancelled), and why: the coordinator withdraws it from its
	// human saying so (a park's "paused by hand (tai fleet pause)").
	Withdrawn string `json:"withdrawn,omitempty"`
}

// errAskGone withdraws an ask whose worker deleted it without saying why.
var errAskGone = errors.New("the task's worker gave the ask up")

// kvToken makes a run or task name a key token: names hold [A-Za-z0-9_.-],
// keys split on dots, and '=' is in neither.
func kvToken(s string) string { return strings.ReplaceAll(s, ".", "=") }

func askKey(run, task string, attempt, n int) string {
	return kvToken(run) + "." + kvToken(task) + "." + strconv.Itoa(attempt) + "." + strconv.Itoa(n)
}

// asker is one attempt's channel to its coordinator.
type asker struct {
	bus     *Bus
	tm      TaskMsg
	attempt int
	worker  string
	n       atomic.Int32
}

// ask puts a to the coordinator and waits for its reply (or ctx).
func (k *asker) ask(ctx context.Context, a Ask) (Ask, error) {
	a.Run, a.Task, a.Attempt, a.Worker = k.tm.Run, k.tm.Task, k.attempt, k.worker
	key := askKey(k.tm.Run, k.tm.Task, k.attempt, int(k.n.Add(1)))
	data, err := json.Marshal(a)
	if err != nil {
		return Ask{}, err
	}
	if len(data) > MaxMessage {
		return Ask{}, fmt.Errorf("remote: a %d-byte ask is over the %d-byte cap", len(data), MaxMessage)
	}
	w, err := k.bus.Asks.Watch(ctx, key)
	if err != nil {
		return Ask{}, fmt.Errorf("remote: watching %s: %w", key, err)
	}
	defer func() { _ = w.Stop() }()
	// Answered or given up, the ask is gone: a coordinator resumed later
	// must not answer it again.
	defer func() { _ = k.bus.Asks.Delete(context.WithoutCancel(ctx), key) }()
	rev, err := k.bus.Asks.Create(ctx, key, data)
	if err != nil {
		return Ask{}, fmt.Errorf("remote: asking: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			k.withdraw(context.WithoutCancel(ctx), key, rev, a, context.Cause(ctx))
			return Ask{}, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return Ask{}, ctx.Err() // the watch ends with ctx
				}
				return Ask{}, errors.New("remote: the ask's watch ended")
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var got Ask
			if json.Unmarshal(e.Value(), &got) == nil && got.Answered {
				return got, nil
			}
		}
	}
}

// withdraw tells the coordinator why the ask under key (at rev) is given
// up, unless it was answered meanwhile (best effort: the ask's deletion
// withdraws it anyway).
func (k *asker) withdraw(ctx context.Context, key string, rev uint64, a Ask, cause error) {
	a.Withdrawn = "withdrawn"
	if cause != nil {
		a.Withdrawn = cause.Error()
	}
	if data, err := json.Marshal(a); err == nil {
		_, _ = k.bus.Asks.Update(ctx, key, data, rev)
	}
}

// question routes the agent's question: fleet.TaskRunOptions.Ask.
func (k *asker) question(ctx context.Context, q, head, patch string) (string, string, fleet.Usage, error) {
	got, err := k.ask(ctx, Ask{Kind: AskQuestion, Question: q, Head: head, Patch: patch})
	if err != nil {
		return "", "", fleet.Usage{}, err
	}
	if got.Error != "" {
		return "", "", got.Usage, errors.New(got.Error)
	}
	return got.Answer, got.DecidedBy, got.Usage, nil
}

// prompter sends a task's permission asks to the coordinator's human.
// key names what an ask's "always" would be remembered under.
type prompter struct {
	k   *asker
	key func(driver.PermissionRequest) string
}

func (p prompter) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	a, _, err := p.AskVia(ctx, req)
	return a, err
}

// AskVia says which of the coordinator's channels answered.
func (p prompter) AskVia(ctx context.Context, req driver.PermissionRequest) (policy.Answer, ask.Via, error) {
	a := Ask{Kind: AskPermission, Permission: &req, Workspace: policy.WorkspaceOf(ctx)}
	if p.key != nil {
		a.Key = p.key(req)
	}
	got, err := p.k.ask(ctx, a)
	if err != nil {
		return policy.DenyOnce, "", err
	}
	if got.Error != "" {
		return policy.DenyOnce, "", errors.New(got.Error)
	}
	return got.Verdict, got.Via, nil
}

// Where: the human is at the coordinator (its terminal or live feed, or
// the terminal of the submitter following a hub's run), not on this host.
func (prompter) Where() string { return "by the coordinator's human" }

// serveAsks answers the run's asks as they come, and those open from
// before a restart, until ctx ends.
func (c *coordinator) serveAsks(ctx context.Context) {
	w, err := c.bus.Asks.Watch(ctx, kvToken(c.o.RunID)+".>")
	if err != nil {
		c.log.Error("watching asks", "err", err)
		return
	}
	defer func() { _ = w.Stop() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	busy := map[string]context.CancelCauseFunc{} // the asks being answered: each withdrawn with its cause
	var mu sync.Mutex
	withdraw := func(key string, why error) {
		mu.Lock()
		defer mu.Unlock()
		if cancel := busy[key]; cancel != nil {
			cancel(why)
		}
	}
	for {
		var e jetstream.KeyValueEntry
		select {
		case <-ctx.Done():
			return
		case e = <-w.Updates():
		}
		if e == nil {
			continue
		}
		if e.Operation() != jetstream.KeyValuePut {
			withdraw(e.Key(), errAskGone) // its worker gave it up
			continue
		}
		var a Ask
		if json.Unmarshal(e.Value(), &a) != nil || a.Answered || a.Run != c.o.RunID {
			continue
		}
		key, rev := e.Key(), e.Revision()
		if a.Withdrawn != "" {
			withdraw(key, errors.New(a.Withdrawn))
			continue
		}
		mu.Lock()
		if busy[key] != nil {
			mu.Unlock()
			continue
		}
		actx, cancel := context.WithCancelCause(ctx)
		busy[key] = cancel
		mu.Unlock()
		wg.Go(func() {
			defer func() { mu.Lock(); delete(busy, key); mu.Unlock(); cancel(nil) }()
			reply := c.answerAsk(actx, key, a)
			if actx.Err() != nil {
				return // answered by the next coordinator, or withdrawn by its worker
			}
			reply.Answered = true
			data, _ := json.Marshal(reply)
			if _, err := c.bus.Asks.Update(context.WithoutCancel(ctx), key, data, rev); err != nil {
				c.log.Warn("replying to an ask", "task", a.Task, "err", err)
			}
		})
	}
}

// answerAsk answers one ask (under key in the asks bucket) as a local
// fleet would, if it is from the attempt holding the task's lease.
func (c *coordinator) answerAsk(ctx context.Context, key string, a Ask) Ask {
	if _, ok := c.results[a.Task]; !ok {
		a.Error = "no task " + a.Task + " in run " + c.o.RunID
		return a
	}
	if l, _, err := c.bus.GetLease(ctx, c.o.RunID, a.Task); err != nil || l.State != LeaseClaimed || l.Attempt != a.Attempt || l.Worker != a.Worker {
		a.Error = fmt.Sprintf("attempt %d by %s does not hold the task's lease", a.Attempt, a.Worker)
		return a
	}
	switch a.Kind {
	case AskPermission:
		if c.o.Prompter == nil || a.Permission == nil {
			a.Error = "the coordinator has no human to ask"
			return a
		}
		return c.askPermission(withHumanKey(ctx, key), a)
	case AskQuestion:
		c.setTask(a.Task, func(x *fleet.TaskState) { x.Status = fleet.StatusAsking })
		c.emit(fleet.EventAsked, a.Task, lastLine(a.Question), map[string]any{"question": a.Question, "attempt": a.Attempt, "worker": a.Worker})
		dir, cleanup := c.askWorktree(ctx, a)
		defer cleanup()
		ans, by, used, err := fleet.Answer(withHumanKey(ctx, key), c.plan, a.Task, dir, a.Question, a.Patch, fleet.AnswerOptions{RunID: c.o.RunID, Audit: c.o.Audit,
			AskHuman: c.o.AskHuman, Exe: c.o.Exe, Version: c.o.Version, Clock: c.clock, Logger: c.log, Sandbox: c.o.Sandbox})
		a.Usage = used
		c.setTask(a.Task, func(x *fleet.TaskState) { x.Status = fleet.StatusRunning })
		if err != nil {
			a.Error = err.Error()
			c.emit(fleet.EventAnswererPass, a.Task, "nobody could answer: "+err.Error(), nil)
			return a
		}
		a.Answer, a.DecidedBy = ans, by
		c.emit(fleet.EventAnswered, a.Task, by+": "+lastLine(ans), map[string]any{"question": a.Question, "answer": ans, "decided_by": by})
		return a
	}
	a.Error = fmt.Sprintf("unknown ask kind %q", a.Kind)
	return a
}

// askPermission puts a permission ask to the coordinator's human, unless
// an "always" answer for the same thing is remembered for the run; an
// "always" answer is. As in a local fleet, asks for the same thing wait
// for each other and the others reach the human at once.
func (c *coordinator) askPermission(ctx context.Context, a Ask) Ask {
	if a.remembered(c.mem) {
		return a
	}
	release, err := c.mem.Turn(ctx, a.Key)
	if err != nil {
		a.Error = "asking for permission: " + err.Error()
		return a
	}
	defer release()
	if a.remembered(c.mem) { // given while this ask waited its turn
		return a
	}
	title := a.Permission.ToolCall.Title
	c.emit(fleet.EventPermissionAsked, a.Task, a.Worker+": "+title, map[string]any{"attempt": a.Attempt, "worker": a.Worker})
	pctx := policy.WithWorkspace(policy.WithAsker(ctx, "task "+a.Task), a.Workspace)
	if vp, ok := c.o.Prompter.(policy.ViaPrompter); ok {
		a.Verdict, a.Via, err = vp.AskVia(pctx, *a.Permission)
	} else {
		a.Verdict, err = c.o.Prompter.Ask(pctx, *a.Permission)
	}
	if err != nil {
		a.Error = "asking for permission: " + err.Error()
		return a
	}
	if a.Key != "" && (a.Verdict == policy.AllowAlways || a.Verdict == policy.DenyAlways) {
		_ = c.mem.Remember(a.Key, policy.Remembered{Allow: a.Verdict == policy.AllowAlways, At: c.clock.Now().UTC(), Title: title, Session: a.Permission.Session})
	}
	return a
}

// remembered answers a from the run's memory of "always" answers.
func (a *Ask) remembered(mem *policy.Memory) bool {
	if a.Key == "" {
		return false
	}
	m, ok := mem.Lookup(a.Key)
	if !ok {
		return false
	}
	a.Verdict, a.DecidedBy = policy.DenyAlways, "remembered"
	if m.Allow {
		a.Verdict = policy.AllowAlways
	}
	return true
}

// askWorktree is where the answerer reads: the task's work so far (the
// attempt's pushed checkpoint), else the target.
func (c *coordinator) askWorktree(ctx context.Context, a Ask) (string, func()) {
	ctx = context.WithoutCancel(ctx)
	at := "refs/heads/" + c.rec.Target
	if a.Head != "" {
		ref := attemptRef(c.o.RunID, a.Task, a.Attempt)
		if c.rec.RepoURL != c.wt.Repo {
			_ = c.wt.NetGit().Fetch(ctx, c.rec.RepoURL, "+"+ref+":"+ref)
		}
		if _, err := c.wt.RevParse(ctx, a.Head+"^{commit}"); err == nil {
			at = a.Head
		}
	}
	dir, err := os.MkdirTemp(c.o.Dir, "ask-"+a.Task+"-")
	if err != nil {
		return c.o.Dir, func() {}
	}
	if err := c.wt.NetGit().AddDetached(ctx, dir, at); err != nil {
		c.log.Warn("the answerer's worktree", "err", err)
		return dir, func() { _ = os.RemoveAll(dir) }
	}
	return dir, func() {
		_ = c.wt.NetGit().RemoveWorktree(ctx, dir)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
