package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tai-dev/tai/internal/lazyre"
	"io"
	"strings"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/quota"
)

// RawKind is the kind of the raw events carrying what the agent sent that
// this build does not understand.
const RawKind = "a2a.unknown"

// errCancelConfirmed ends a turn whose task the agent reported canceled
// in answer to CancelTask.
var errCancelConfirmed = errors.New("a2a: the agent confirmed the cancel")

// errCancelUnsent ends a blocking turn cancelled before the agent named
// its task, so that no CancelTask could be sent.
var errCancelUnsent = errors.New("a2a: cancelled before the agent named its task")

// errDecisionCancelled: the permission decision for an approval question
// was cancelled (the turn's context, a Decider error).
var errDecisionCancelled = errors.New("a2a: the permission decision was cancelled")

// turn is one Prompt: one task, or several when an approval question is
// answered in the same task. Events are applied and emitted on the Prompt
// goroutine only, so they stay in order.
type turn struct {
	s     *Session
	ctx   context.Context
	abort context.CancelCauseFunc

	// Guarded by s.mu: Cancel and Close read them.
	taskID          string
	cancelled       bool
	cause           error // why it was cancelled (Cancel's cause), nil: not said
	cancelSent      bool
	cancelConfirmed bool

	// Owned by the Prompt goroutine.
	status    Status
	seen      bool              // a status arrived
	message   bool              // the agent answered with a Message: the turn is over
	artifacts map[string]string // text shown so far, by task/artifact id
	shown     map[string]bool   // status messages shown, by id or text
	state     State             // the last state reported as a status event
	meta      []json.RawMessage // the metadata that came with the status (its message's, its event's or task's)
	sent      outMessage        // the message being sent
	nMsg      int
	questions int
}

func (t *turn) confirmCancel() {
	t.s.mu.Lock()
	t.cancelConfirmed = true
	t.s.mu.Unlock()
	t.abort(errCancelConfirmed)
}

func (t *turn) isCancelled() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.cancelled
}

// Prompt runs one turn: it sends the prompt, follows the task to its end
// (answering approval questions through the Decider), and returns how it
// ended. Events of the turn have all been emitted when it returns.
func (s *Session) Prompt(ctx context.Context, prompt []driver.Content) (driver.TurnResult, error) {
	if err := checkContent(prompt); err != nil {
		return driver.TurnResult{}, err
	}
	select {
	case <-s.idle:
	case <-s.ctx.Done():
		return driver.TurnResult{}, errClosed
	case <-ctx.Done():
		return driver.TurnResult{}, fmt.Errorf("prompt: %w", ctx.Err())
	}
	defer func() { s.idle <- struct{}{} }()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return driver.TurnResult{}, errClosed
	}
	tctx, abort := context.WithCancelCause(ctx)
	t := &turn{s: s, ctx: tctx, abort: abort, artifacts: map[string]string{}, shown: map[string]bool{}}
	s.turn = t
	msg := outMessage{ID: s.o.NewID(), ContextID: s.contextID, TaskID: s.inputTask, Content: prompt,
		DraftTaskID: s.o.NewID(), DraftSessionID: s.draftSess}
	if r := s.refused; r != nil {
		// The agent refused the last prompt at its limit without taking
		// it: it goes out again, ahead of this one (the continue prompt).
		msg.Content = append(append([]driver.Content(nil), r.Content...), prompt...)
		msg.TaskID = orDefault(msg.TaskID, r.TaskID)
		s.refused = nil
	}
	s.inputTask = ""
	s.mu.Unlock()
	stopAfter := context.AfterFunc(s.ctx, func() { abort(errClosed) })
	defer func() {
		stopAfter()
		abort(nil)
		s.mu.Lock()
		s.turn = nil
		s.mu.Unlock()
	}()
	return t.run(msg)
}

func (t *turn) run(msg outMessage) (driver.TurnResult, error) {
	s := t.s
	for {
		t.sent = msg
		err := t.exchange(msg)
		if err != nil {
			return t.failed(err)
		}
		q := t.question()
		if t.status.State != StateInputRequired || t.isCancelled() || s.l.Host.Decider == nil {
			return t.finish()
		}
		yes, no, ok := approvalWords(q)
		if !ok {
			return t.finish()
		}
		answer, err := t.ask(q, yes, no)
		if err != nil {
			return t.failed(err)
		}
		s.mu.Lock()
		msg = outMessage{ID: s.o.NewID(), ContextID: s.contextID, TaskID: t.taskID, Content: []driver.Content{driver.TextContent(answer)},
			DraftSessionID: s.draftSess}
		s.mu.Unlock()
		t.status, t.seen = Status{}, false
	}
}

// exchange sends one message and follows its task until it is over or
// waits for the client.
func (t *turn) exchange(msg outMessage) error {
	s := t.s
	if s.streaming {
		var st *rpcStream
		err := s.negotiate(func(ep endpoint) error {
			var err error
			st, err = s.c.stream(t.ctx, ep, ep.d.stream, ep.d.sendParams(msg, ep.tenant, false))
			return err
		})
		if err != nil {
			return err
		}
		if err := t.consume(st); err != nil && !dropped(err) {
			return err
		}
	} else {
		var raw json.RawMessage
		err := s.negotiate(func(ep endpoint) error {
			var err error
			raw, err = s.c.call(t.ctx, ep, ep.d.send, ep.d.sendParams(msg, ep.tenant, true))
			return err
		})
		if err != nil {
			return err
		}
		ev, err := DecodeEvent(raw)
		if err != nil {
			return fmt.Errorf("%w: %w", driver.ErrProtocol, err)
		}
		t.apply(ev)
	}
	if s.ep().d == dDraft {
		t.learn("", s.draftSess) // a draft agent need not echo the session id
	}
	if t.settled() {
		return nil
	}
	return t.follow()
}

// dropped: the stream ended without the task ending; follow picks it up.
// A limit (an HTTP 429) is not: retrying it at once would only be refused.
func dropped(err error) bool {
	var re *driver.RemoteError
	_, limit := quota.As(err)
	return !errors.As(err, &re) && !limit && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// settled: the turn's task is over or waits for the client.
func (t *turn) settled() bool {
	return t.message || (t.seen && !t.status.State.running())
}

// consume reads a stream until the task is over or waits for the client,
// or the stream ends (nil) or breaks. Unreadable items are reported and
// skipped.
func (t *turn) consume(st *rpcStream) error {
	defer st.Close()
	for {
		raw, err := st.Next()
		var fe *FrameError
		var oe *OversizeError
		switch {
		case errors.As(err, &fe):
			t.s.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "bad_frame", Message: fe.Error()}})
			continue
		case errors.As(err, &oe):
			t.s.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "oversize_frame", Message: oe.Error()}})
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			if t.ctx.Err() != nil {
				return t.ctx.Err()
			}
			return err
		}
		ev, err := DecodeEvent(raw)
		if err != nil {
			t.s.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "bad_result", Message: err.Error()}})
			continue
		}
		t.apply(ev)
		if t.message || t.status.State.Terminal() || t.status.State.Interrupted() || ev.Final {
			return nil
		}
	}
}

// follow picks a task up after its stream ended early, or after a
// blocking send answered before the task finished: SubscribeToTask a few
// times, then GetTask polls, which also read the task's whole artifacts.
func (t *turn) follow() error {
	s := t.s
	t.s.mu.Lock()
	id := t.taskID
	t.s.mu.Unlock()
	if id == "" {
		return fmt.Errorf("%w: the agent's answer ended before it named a task", driver.ErrProtocol)
	}
	for i := 0; s.streaming && i < s.o.Resubscribes; i++ {
		ep := s.ep()
		s.log.Debug("stream ended early; resubscribing", "task", id, "attempt", i+1)
		st, err := s.c.stream(t.ctx, ep, ep.d.resubscribe, ep.d.taskParams(id, ep.tenant))
		if err == nil {
			err = t.consume(st)
		}
		if t.settled() {
			return nil
		}
		if t.ctx.Err() != nil {
			return t.ctx.Err()
		}
		if limited(err, s.clock.Now()) {
			return err
		}
		if err != nil && !dropped(err) || notSpoken(err) {
			break // -32004 (a task over, a server without it) and friends: poll
		}
	}
	failures := 0
	for {
		ep := s.ep()
		raw, err := s.c.call(t.ctx, ep, ep.d.get, ep.d.taskParams(id, ep.tenant))
		if err != nil {
			if t.ctx.Err() != nil {
				return t.ctx.Err()
			}
			if failures++; !dropped(err) || failures >= 3 {
				return fmt.Errorf("a2a: following task %s: %w", id, err)
			}
		} else {
			failures = 0
			ev, err := DecodeEvent(raw)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", driver.ErrProtocol, ep.d.get, err)
			}
			t.apply(ev)
			if t.settled() {
				return nil
			}
		}
		if err := t.wait(); err != nil {
			return err
		}
	}
}

// wait sleeps PollInterval on the session's clock, or until the turn ends.
func (t *turn) wait() error {
	tm := t.s.clock.NewTimer(t.s.o.PollInterval, "a2a", "poll")
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-t.ctx.Done():
		return t.ctx.Err()
	}
}

// learn records the ids the agent named.
func (t *turn) learn(taskID, contextID string) {
	s := t.s
	s.mu.Lock()
	if contextID != "" && s.contextID == "" {
		s.contextID = contextID
	} else if contextID != "" && contextID != s.contextID {
		s.log.Debug("the agent answered in another context", "context", contextID, "session", s.contextID)
	}
	if !s.started && s.contextID != "" {
		s.startedLocked(false)
	}
	var cancel bool
	if taskID != "" && taskID != t.taskID {
		t.taskID = taskID
		if t.cancelled && !t.cancelSent {
			t.cancelSent, cancel = true, true
		}
	}
	s.mu.Unlock()
	if cancel {
		s.cancelInBackground(t, taskID)
	}
}

// apply maps one A2A event onto the common model.
func (t *turn) apply(ev Event) {
	switch ev.Kind {
	case KindTask:
		tk := ev.Task
		t.learn(tk.ID, tk.ContextID)
		t.setStatus(tk.Status, tk.Metadata)
		for _, a := range tk.Artifacts {
			t.artifact(tk.ID, a, false, true)
		}
	case KindMessage:
		m := ev.Message
		t.learn(m.TaskID, m.ContextID)
		if m.Role != roleUser {
			t.showMessage(m)
		}
		t.message = true
	case KindStatus:
		t.learn(ev.TaskID, ev.ContextID)
		t.setStatus(ev.Status, ev.Metadata)
	case KindArtifact:
		t.learn(ev.TaskID, ev.ContextID)
		t.artifact(ev.TaskID, ev.Artifact, ev.Append, false)
	default:
		t.s.log.Debug("unknown A2A event kept raw", "raw", string(ev.Raw))
		t.s.emit(driver.Event{Type: driver.EventRaw, Raw: &driver.RawUpdate{Kind: RawKind, Data: ev.Raw}})
	}
}

func (t *turn) setStatus(st Status, meta json.RawMessage) {
	t.status, t.seen = st, true
	t.meta = t.meta[:0]
	if st.Message != nil && len(st.Message.Metadata) > 0 {
		t.meta = append(t.meta, st.Message.Metadata)
	}
	if len(meta) > 0 {
		t.meta = append(t.meta, meta)
	}
	if st.Message != nil && st.Message.Role != roleUser {
		t.showMessage(st.Message)
	}
	if st.State == t.state {
		return
	}
	t.state = st.State
	var coarse string
	switch {
	case st.State.running():
		coarse = "working"
	case st.State.Interrupted():
		coarse = "waiting"
	default:
		return // the turn.ended that follows says it
	}
	t.s.emit(driver.Event{Type: driver.EventStatus, Status: &driver.Status{State: coarse}})
}

// showMessage emits an agent message once: a task snapshot repeats the
// status message its stream already carried.
func (t *turn) showMessage(m *Message) {
	key := m.ID
	if key == "" {
		key = "text:" + partsText(m.Parts)
	}
	if t.shown[key] {
		return
	}
	t.shown[key] = true
	id := m.ID
	if id == "" {
		t.nMsg++
		id = fmt.Sprintf("%s/message-%d", t.taskID, t.nMsg)
	}
	t.emitParts(id, m.Parts, false)
}

// artifact emits an artifact's parts as one agent message keyed by its
// id: appended chunks extend it, a new version replaces it, a snapshot
// (a Task's artifacts) only shows what is not shown yet.
func (t *turn) artifact(taskID string, a Artifact, appendTo, snapshot bool) {
	key := "artifact:" + taskID + "/" + a.ID
	text := partsText(a.Parts)
	prev, seen := t.artifacts[key]
	switch {
	case snapshot && seen && prev == text:
		return
	case appendTo && seen:
		t.artifacts[key] = prev + text
		t.emitParts(key, a.Parts, false)
	case !seen:
		t.artifacts[key] = text
		t.emitParts(key, a.Parts, false)
	default:
		t.artifacts[key] = text
		t.emitParts(key, a.Parts, true)
	}
}

// emitParts emits the text parts as one chunk and every other part raw.
func (t *turn) emitParts(id string, parts []Part, replace bool) {
	if text := partsText(parts); text != "" || replace {
		t.s.emit(driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: id, Text: text, Replace: replace}})
	}
	for _, p := range parts {
		if !p.IsText {
			t.s.emit(driver.Event{Type: driver.EventMessage, Message: &driver.MessageChunk{Role: driver.RoleAgent, MessageID: id, Content: p.Raw}})
		}
	}
}

// question is the text of the status message the task stopped on.
func (t *turn) question() string {
	if t.status.Message == nil {
		return ""
	}
	return strings.TrimSpace(partsText(t.status.Message.Parts))
}

// yesNo finds the yes/no an approval question offers: "yes/no", "(y/n)",
// "[Y/n]", "yes or no".
var yesNo = lazyre.New(`(?i)\b(yes|y)\s*/\s*(no|n)\b|\b(yes)\s+or\s+(no)\b`)

// approvalWords reports whether q offers yes/no, and the words to answer
// with, as the agent spelled them.
func approvalWords(q string) (yes, no string, ok bool) {
	m := yesNo().FindStringSubmatch(q)
	if m == nil {
		return "", "", false
	}
	if m[1] != "" {
		return strings.ToLower(m[1]), strings.ToLower(m[2]), true
	}
	return strings.ToLower(m[3]), strings.ToLower(m[4]), true
}

// ask puts an approval question to the Decider and returns the answer.
func (t *turn) ask(q, yes, no string) (string, error) {
	s := t.s
	t.questions++
	s.mu.Lock()
	taskID := t.taskID
	s.mu.Unlock()
	id := fmt.Sprintf("%s/input-%d", taskID, t.questions)
	input, _ := json.Marshal(map[string]string{"task_id": taskID, "question": q})
	opts := []driver.PermissionOption{{ID: yes, Name: "Yes (" + yes + ")", Kind: driver.OptionAllowOnce},
		{ID: no, Name: "No (" + no + ")", Kind: driver.OptionRejectOnce}}
	req := driver.PermissionRequest{ID: id, Session: s.ID(), Options: opts,
		ToolCall: driver.ToolCall{ID: id, Title: q, Kind: driver.KindOther, Status: "pending", Name: "a2a.input_required", RawInput: input}}
	d, err := driver.AskPermission(t.ctx, s.l.Host.Decider, s.emit, req, func(error) string {
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.cause != nil {
			return t.cause.Error() // the turn's cancel said why
		}
		return "the decision was cancelled"
	})
	if err != nil {
		s.log.Warn("permission decision failed; cancelling the task", "err", err)
	}
	switch {
	case d.Outcome != driver.OutcomeSelected || d.Verdict == driver.VerdictCancelled:
		return "", errDecisionCancelled
	case d.OptionID == no || d.Verdict == driver.VerdictDeny:
		return no, nil
	case d.OptionID == yes || d.Verdict == driver.VerdictAllow:
		return yes, nil
	}
	return no, nil
}

// failed ends a turn that broke off: a cancel the agent confirmed or a
// cancelled decision end it cancelled, the caller's context and Close end
// it with their error (after cancelling the task, which would run on),
// anything else is the agent's error.
func (t *turn) failed(err error) (driver.TurnResult, error) {
	s := t.s
	cause := context.Cause(t.ctx)
	s.mu.Lock()
	confirmed, id, sent := t.cancelConfirmed, t.taskID, t.cancelSent
	s.mu.Unlock()
	switch {
	case confirmed || errors.Is(cause, errCancelConfirmed):
		t.status, t.seen = Status{State: StateCanceled}, true
		return t.finish()
	case errors.Is(cause, errCancelUnsent):
		s.emit(driver.Event{Type: driver.EventError, Error: &driver.ErrorInfo{Code: "cancel_unsent",
			Message: "the turn was cancelled before the agent named its task: the request was dropped, and the agent may work on"}})
		t.status, t.seen = Status{State: StateCanceled}, true
		return t.finish()
	case errors.Is(err, errDecisionCancelled) && t.ctx.Err() == nil:
		s.mu.Lock()
		t.cancelled, t.cancelSent = true, true
		s.mu.Unlock()
		cctx, cancel := s.clockTimeout(t.ctx, s.o.CancelTimeout)
		if cerr := s.cancelTask(cctx, t, id); cerr != nil {
			s.log.Debug("cancelling the task after a cancelled decision", "task", id, "err", cerr)
		}
		cancel()
		t.status, t.seen = Status{State: StateCanceled}, true
		return t.finish()
	case t.ctx.Err() != nil:
		if id != "" && !sent && !errors.Is(cause, errClosed) {
			s.mu.Lock()
			t.cancelSent = true
			s.mu.Unlock()
			s.cancelInBackground(nil, id)
		}
		if errors.Is(cause, errClosed) {
			return driver.TurnResult{}, fmt.Errorf("prompt: %w", errClosed)
		}
		return driver.TurnResult{}, fmt.Errorf("prompt: %w", cause)
	}
	if id == "" && limited(err, s.clock.Now()) {
		// Refused at the limit before the agent took the message (no task):
		// the next Prompt sends it again, so that a resume after the reset
		// does not lose it.
		s.mu.Lock()
		sent := t.sent
		s.refused = &sent
		s.mu.Unlock()
	}
	return driver.TurnResult{}, fmt.Errorf("a2a: prompt: %w", err)
}

// taskError is the error of a task that failed or was rejected: a
// *quota.Error when its status message or metadata says the agent hit its
// limit (the reset from metadata such as resetsAt or retryAfter, else the
// text), else a *TaskError.
func (t *turn) taskError(id, msg string) error {
	te := &TaskError{TaskID: id, State: t.status.State, Message: msg}
	if l, ok := limitOf(msg, t.meta, t.s.clock.Now()); ok {
		return &quota.Error{Limit: l, Err: te}
	}
	return te
}

// limitOf is the limit a failure's text and metadata objects name, the
// first one that gives a reset time preferred.
func limitOf(text string, metas []json.RawMessage, now time.Time) (quota.Limit, bool) {
	var found quota.Limit
	ok := false
	for _, m := range append(metas, nil) {
		l, k := quota.FromFields(m, text, now)
		if !k {
			continue
		}
		if !l.ResetsAt.IsZero() {
			return l, true
		}
		if !ok {
			found, ok = l, true
		}
	}
	return found, ok
}

// finish maps the task's last state to the turn's end and emits it.
func (t *turn) finish() (driver.TurnResult, error) {
	s := t.s
	s.mu.Lock()
	if !s.started {
		s.startedLocked(false)
	}
	id := t.taskID
	s.mu.Unlock()
	st := t.status.State
	msg := t.question()
	var res driver.TurnResult
	var err error
	switch {
	case st == StateCanceled:
		res.StopReason = driver.StopCancelled
	case t.message || st == StateCompleted:
		res.StopReason = driver.StopEndTurn
	case st == StateInputRequired:
		res.StopReason = StopInputRequired
	case st == StateAuthRequired:
		res.StopReason = StopAuthRequired
		err = &driver.AuthRequiredError{Message: orDefault(msg, "the agent's task "+id+" is auth-required")}
	case st == StateRejected:
		res.StopReason = StopRejected
		err = t.taskError(id, msg)
	default: // failed, and states tai does not know
		res.StopReason = StopFailed
		err = t.taskError(id, msg)
	}
	if st.Interrupted() {
		s.mu.Lock()
		s.inputTask = id
		s.mu.Unlock()
	}
	s.emit(driver.Event{Type: driver.EventTurnEnded, Turn: &driver.TurnEnded{StopReason: res.StopReason}})
	return res, err
}
