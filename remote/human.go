package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// BucketHuman holds the asks of a hub-coordinated run that wait for the
// human who follows it at a terminal (tai fleet run --submit):
// <run>.<task>.<attempt>.<n> (the worker's ask's key) → HumanAsk. The
// coordinator opens one, the follower answers it with compare-and-swap,
// and the coordinator closes it, saying who answered, when another channel
// (the hub's live feed) answered first. Answered and closed asks stay, as
// their last state, until the run ends (a follower that starts later asks
// only open ones; a restarted coordinator takes an answer given while none
// ran). Only KV operations of NATS 2.9.
const BucketHuman = "tai_human"

// HumanState is where a human ask stands.
type HumanState string

// Human ask states.
const (
	HumanOpen     HumanState = "open"     // waiting for the follower
	HumanAnswered HumanState = "answered" // the follower answered (Verdict or Answer)
	HumanClosed   HumanState = "closed"   // withdrawn: another channel answered (Via), or the ask ended (Reason)
)

// HumanAsk is an ask put to the run's follower, and its answer.
type HumanAsk struct {
	State      HumanState                `json:"state"`
	Kind       AskKind                   `json:"kind"`
	Run        string                    `json:"run"`
	Task       string                    `json:"task"`
	Since      time.Time                 `json:"since"`
	Question   string                    `json:"question,omitempty"`
	Permission *driver.PermissionRequest `json:"permission,omitempty"`
	Workspace  string                    `json:"workspace,omitempty"` // the task's worktree, for the diff's file names

	Verdict policy.Answer `json:"verdict,omitempty"` // a permission's answer (the follower's, or the winner's when closed)
	Answer  string        `json:"answer,omitempty"`  // a question's
	Via     ask.Via       `json:"via,omitempty"`     // closed: the channel that answered first
	Reason  string        `json:"reason,omitempty"`  // closed with no answer: why
}

// humanKeyCtx carries the key of the ask being answered to the Submitter
// channel.
type humanKeyCtx struct{}

func withHumanKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, humanKeyCtx{}, key)
}

// Submitter is the human following a hub-coordinated run, as a channel
// of its coordinator's ask races: Channel for permission asks, Questions
// for questions. Asks reach it only from the coordinator answering a
// worker's ask.
type Submitter struct {
	Bus *Bus
	Run string
}

// Channel is the submitter as a channel of a permission race.
func (s Submitter) Channel() policy.PermissionChannel { return policy.Channel(ask.ViaSubmitter, s) }

// Questions is the submitter as a channel of a question's race.
func (s Submitter) Questions() ask.QuestionChannel {
	return ask.QuestionChannel{Via: ask.ViaSubmitter, Ask: func(ctx context.Context, q ask.Question) (string, ask.Via, error) {
		text, err := s.AskQuestion(ctx, q.Task, q.Text)
		return text, ask.ViaSubmitter, err
	}}
}

// Ask implements policy.Prompter.
func (s Submitter) Ask(ctx context.Context, req driver.PermissionRequest) (policy.Answer, error) {
	a, _, err := s.AskVia(ctx, req)
	return a, err
}

// AskVia implements policy.ViaPrompter.
func (s Submitter) AskVia(ctx context.Context, req driver.PermissionRequest) (policy.Answer, ask.Via, error) {
	got, err := s.ask(ctx, HumanAsk{Kind: AskPermission, Permission: &req, Task: taskOf(ctx), Workspace: policy.WorkspaceOf(ctx)})
	if err != nil {
		return policy.DenyOnce, "", err
	}
	return got.Verdict, ask.ViaSubmitter, nil
}

// Where says where the submitter answers, for the decision's reason.
func (Submitter) Where() string { return "at the submitter's terminal" }

// AskQuestion puts a task's question to the submitter until it answers or
// ctx ends (its cause an *ask.AnsweredElsewhere when another channel
// answered first).
func (s Submitter) AskQuestion(ctx context.Context, task, q string) (string, error) {
	got, err := s.ask(ctx, HumanAsk{Kind: AskQuestion, Task: task, Question: q})
	if err != nil {
		return "", err
	}
	return got.Answer, nil
}

func taskOf(ctx context.Context) string { return strings.TrimPrefix(policy.AskerOf(ctx), "task ") }

// ask opens h under the ask's key, waits for the follower's answer, and
// closes it when ctx ends first (the cause says who answered instead).
func (s Submitter) ask(ctx context.Context, h HumanAsk) (HumanAsk, error) {
	key, ok := ctx.Value(humanKeyCtx{}).(string)
	if !ok {
		return HumanAsk{}, errors.New("remote: no ask of a worker to put to the submitter")
	}
	kv := s.Bus.Human
	h.State, h.Since = HumanOpen, time.Now().UTC()
	h.Run = s.Run
	data, err := json.Marshal(h)
	if err != nil {
		return HumanAsk{}, err
	}
	if len(data) > MaxMessage {
		return HumanAsk{}, fmt.Errorf("remote: a %d-byte ask is over the %d-byte cap", len(data), MaxMessage)
	}
	// The watch outlives ctx: when ctx ends the ask is closed, not just
	// abandoned (a watch made with ctx would end with it, unclosed).
	wctx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	w, err := kv.Watch(wctx, key)
	if err != nil {
		return HumanAsk{}, fmt.Errorf("remote: watching %s: %w", key, err)
	}
	defer func() { _ = w.Stop() }()
	// Opened whatever ctx does meanwhile, so that it is closed, not just
	// deleted, when ctx ends (the follower then hears who answered).
	octx := context.WithoutCancel(ctx)
	rev, err := kv.Create(octx, key, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		// The coordinator before a restart opened it; the follower may
		// have answered it meanwhile.
		if e, gerr := kv.Get(octx, key); gerr == nil {
			var old HumanAsk
			if json.Unmarshal(e.Value(), &old) == nil && old.State == HumanAnswered {
				return old, nil
			}
			rev, err = kv.Update(octx, key, data, e.Revision())
		}
	}
	if err != nil {
		return HumanAsk{}, fmt.Errorf("remote: asking the submitter: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			s.close(context.WithoutCancel(ctx), key, rev, h, context.Cause(ctx))
			return HumanAsk{}, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return HumanAsk{}, errors.New("remote: the submitter's ask's watch ended")
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var got HumanAsk
			if json.Unmarshal(e.Value(), &got) != nil {
				continue
			}
			rev = max(rev, e.Revision())
			if got.State == HumanAnswered {
				return got, nil
			}
		}
	}
}

// close withdraws h, telling the follower who answered (cause is an
// *ask.AnsweredElsewhere) or why not. It writes over a follower's
// answer that came too late: the race has its winner.
func (s Submitter) close(ctx context.Context, key string, rev uint64, h HumanAsk, cause error) {
	h.State = HumanClosed
	var elsewhere *ask.AnsweredElsewhere
	switch {
	case errors.As(cause, &elsewhere):
		h.Via = elsewhere.Via
		if h.Kind == AskPermission {
			h.Verdict, _, _ = policy.ElsewhereAnswer(cause)
		}
	case cause != nil:
		h.Reason = cause.Error()
	default:
		h.Reason = "withdrawn"
	}
	data, err := json.Marshal(h)
	if err != nil {
		return
	}
	if _, err := s.Bus.Human.Update(ctx, key, data, rev); err != nil {
		_, _ = s.Bus.Human.Put(ctx, key, data)
	}
}

// purgeHuman removes a finished run's asks from the bucket.
func purgeHuman(ctx context.Context, b *Bus, run string) {
	keys, err := b.Human.ListKeysFiltered(ctx, kvToken(run)+".>")
	if err != nil {
		return
	}
	for k := range keys.Keys() {
		_ = b.Human.Purge(ctx, k)
	}
}

// HumanAnswerer is the human at the follower's terminal. Each call's ctx
// ends when the ask is withdrawn, its cause an *ask.AnsweredElsewhere
// when another channel answered first.
type HumanAnswerer interface {
	Permission(ctx context.Context, a HumanAsk) (policy.Answer, error)
	Question(ctx context.Context, a HumanAsk) (string, error)
}

// withdrawnBy is why a prompt for an ask that is no longer open goes: who
// answered it, or why it was withdrawn.
func withdrawnBy(a HumanAsk) error {
	switch {
	case a.State == HumanAnswered: // at another following terminal
		return elsewhereOf(a, ask.ViaSubmitter)
	case a.State == HumanClosed && a.Via != "":
		return elsewhereOf(a, a.Via)
	case a.State == HumanClosed && a.Reason != "":
		return errors.New(a.Reason)
	}
	return errors.New("the ask was withdrawn")
}

// elsewhereOf is the withdrawal of a, answered via via: what a race's
// loser hears.
func elsewhereOf(a HumanAsk, via ask.Via) *ask.AnsweredElsewhere {
	if a.Kind == AskQuestion {
		return &ask.AnsweredElsewhere{Via: via}
	}
	return &ask.AnsweredElsewhere{Via: via, Word: a.Verdict.Word(), Answer: a.Verdict}
}

// FollowAsks puts run's asks that wait for a human to h as they come
// (those open before it started included) until ctx ends, and writes each
// answer back with compare-and-swap: the first answer wins, and a late one
// is dropped. A prompt that fails (the terminal closed) leaves its ask to
// the other channels.
func FollowAsks(ctx context.Context, b *Bus, run string, h HumanAnswerer) error {
	w, err := b.Human.Watch(ctx, kvToken(run)+".>")
	if err != nil {
		return fmt.Errorf("remote: watching run %s's asks: %w", run, err)
	}
	defer func() { _ = w.Stop() }()
	type open struct {
		cancel context.CancelCauseFunc
		rev    uint64
	}
	var mu sync.Mutex
	asking := map[string]*open{}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer func() {
		mu.Lock()
		for _, o := range asking {
			o.cancel(context.Canceled)
		}
		mu.Unlock()
	}()
	for {
		var e jetstream.KeyValueEntry
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case e, ok = <-w.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil // the watch ends with ctx
				}
				return errors.New("remote: the asks' watch ended")
			}
		}
		if e == nil {
			continue
		}
		key := e.Key()
		var a HumanAsk
		if e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &a) != nil || a.State != HumanOpen {
			// Answered, withdrawn or gone: a prompt still on screen goes.
			mu.Lock()
			if o := asking[key]; o != nil {
				o.cancel(withdrawnBy(a))
				delete(asking, key)
			}
			mu.Unlock()
			continue
		}
		mu.Lock()
		if o := asking[key]; o != nil {
			o.rev = e.Revision() // reopened by a restarted coordinator
			mu.Unlock()
			continue
		}
		actx, cancel := context.WithCancelCause(ctx)
		o := &open{cancel: cancel, rev: e.Revision()}
		asking[key] = o
		mu.Unlock()
		wg.Go(func() {
			defer cancel(nil)
			reply := a
			var err error
			switch a.Kind {
			case AskPermission:
				if a.Permission == nil {
					return
				}
				reply.Verdict, err = h.Permission(actx, a)
			case AskQuestion:
				reply.Answer, err = h.Question(actx, a)
			default:
				return
			}
			mu.Lock()
			rev := o.rev
			if asking[key] == o {
				delete(asking, key)
			}
			mu.Unlock()
			if err != nil || actx.Err() != nil {
				return
			}
			reply.State = HumanAnswered
			data, jerr := json.Marshal(reply)
			if jerr != nil {
				return
			}
			// Compare-and-swap: an ask closed meanwhile keeps its winner.
			_, _ = b.Human.Update(context.WithoutCancel(ctx), key, data, rev)
		})
	}
}
