package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tai-dev/tai/jsonrpc"
	"github.com/tai-dev/tai/protocol/acp"
)

// errCancelled ends a turn with stopReason "cancelled".
var errCancelled = errors.New("turn cancelled")

// turn is one session/prompt being played.
type turn struct {
	a    *agent
	s    *session
	ctx  context.Context // cancelled by session/cancel, session/close, $/cancel_request or conn close
	stop acp.StopReason
	late int // late_updates to send after the response
	// latePerms are late_permission steps, asked after the response.
	latePerms []*LatePermissionStep
}

func (a *agent) prompt(ctx context.Context, params json.RawMessage) (any, error) {
	var req acp.PromptRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	if a.leaving.Load() {
		<-a.ctx.Done() // an agent on its way out answers nothing
		return nil, a.ctx.Err()
	}
	s, err := a.mustSession(req.SessionId)
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !s.startTurn(cancel) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "a prompt is already running in session " + s.id}
	}
	defer s.endTurn()
	defer a.save(s) // after the turn's history, before the response

	// The prompt becomes part of the history that session/load replays.
	var text strings.Builder
	for _, b := range req.Prompt {
		s.record(historyEntry{update: acp.SessionUpdate{UserMessageChunk: &acp.ContentChunk{Content: b}}})
		if b.Text != nil {
			text.WriteString(b.Text.Text)
		}
	}
	prompt := strings.TrimSpace(text.String())
	s.mu.Lock()
	if s.title == "" && prompt != "" {
		s.title = truncate(prompt, 60)
	}
	s.mu.Unlock()

	t := &turn{a: a, s: s, ctx: tctx, stop: acp.StopEndTurn}
	if strings.HasPrefix(prompt, "/") {
		err = t.slash(prompt)
	} else {
		err = t.play(a.script.Steps)
	}
	var ce *CrashError
	var le *limitError
	switch {
	case errors.As(err, &le):
		if le.step.Exit {
			// No request is answered from now on, and the process ends
			// once this answer is out.
			a.leaving.Store(true)
			a.afterResponse(ctx, func() { a.exitAfterLimit(s, le.step.Forget) })
		}
		return nil, le.rpc // answered verbatim, as the agent it plays does
	case errors.As(err, &ce):
		<-a.ctx.Done() // a crashed agent answers nothing; Serve is tearing down
		return nil, err
	case errors.Is(err, errCancelled), err == nil && tctx.Err() != nil:
		t.stop = acp.StopCancelled
	case err != nil:
		return nil, err
	}
	if t.late > 0 {
		n := t.late
		// The updates must follow the response on the wire, which only the
		// writer can see: they are sent once the response line is out.
		id := s.nextID("msg")
		a.afterResponse(ctx, func() {
			for i := range n {
				if err := t.sayIn(id, fmt.Sprintf("late update %d/%d ", i+1, n)); err != nil {
					return
				}
			}
		})
	}
	for _, lp := range t.latePerms {
		a.afterResponse(ctx, func() { a.latePermission(s, lp) })
	}
	a.log.Debug("builtin agent: turn done", "session", s.id, "stopReason", t.stop)
	return acp.PromptResponse{StopReason: t.stop}, nil
}

// latePermission asks lp outside any turn: the agent's lifetime bounds
// it, not a turn's.
func (a *agent) latePermission(s *session, lp *LatePermissionStep) {
	if lp.Cue != "" {
		f, err := os.Open(s.abs(lp.Cue)) // a named pipe: blocks until a writer opens it
		if err != nil {
			a.log.Warn("builtin agent: late_permission cue", "err", err)
			return
		}
		f.Close()
	}
	t := &turn{a: a, s: s, ctx: a.ctx, stop: acp.StopEndTurn}
	if err := t.permission(&lp.PermissionStep); err != nil {
		a.log.Warn("builtin agent: late permission", "err", err)
	}
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// play runs steps in order; cancellation is honoured between steps and
// inside steps that wait (delays, client requests), except before a step
// that plays an agent deaf to it (hang, spend_after_cancel): that agent
// goes on however early the cancel comes.
func (t *turn) play(steps []Step) error {
	for i, st := range steps {
		if t.ctx.Err() != nil && st.Hang == nil && st.SpendAfterCancel == nil {
			return errCancelled
		}
		if err := t.step(st); err != nil {
			if errors.Is(err, errCancelled) || t.ctx.Err() != nil {
				return errCancelled
			}
			var ce *CrashError
			if errors.As(err, &ce) {
				return err
			}
			return fmt.Errorf("steps[%d] (%s): %w", i, st.Kind(), err)
		}
	}
	return nil
}

func (t *turn) step(st Step) error {
	switch {
	case st.Text != nil:
		return t.chunks(st.Text, false)
	case st.Thought != nil:
		return t.chunks(st.Thought, true)
	case st.Plan != nil:
		entries := make([]acp.PlanEntry, len(st.Plan.Entries))
		for i, e := range st.Plan.Entries {
			entries[i] = acp.PlanEntry{Content: e.Content, Priority: acp.PlanEntryPriority(e.Priority), Status: acp.PlanEntryStatus(e.Status)}
			if entries[i].Priority == "" {
				entries[i].Priority = acp.PlanPriorityMedium
			}
			if entries[i].Status == "" {
				entries[i].Status = acp.PlanStatusPending
			}
		}
		return t.sendPlan(entries)
	case st.PlanStatus != nil:
		t.s.mu.Lock()
		entries := append([]acp.PlanEntry(nil), t.s.plan...)
		t.s.mu.Unlock()
		if st.PlanStatus.Entry >= len(entries) {
			t.a.log.Warn("builtin agent: plan_status for a missing entry", "entry", st.PlanStatus.Entry, "entries", len(entries))
			return nil
		}
		entries[st.PlanStatus.Entry].Status = acp.PlanEntryStatus(st.PlanStatus.Status)
		return t.sendPlan(entries)
	case st.Read != nil:
		return t.read(st.Read)
	case st.Write != nil:
		return t.write(st.Write)
	case st.Run != nil:
		return t.run(st.Run)
	case st.Permission != nil:
		return t.permission(st.Permission)
	case st.SwitchMode != nil:
		return t.switchMode(st.SwitchMode)
	case st.Commands != nil:
		t.s.mu.Lock()
		t.s.commands = append([]Command(nil), st.Commands.Commands...)
		t.s.mu.Unlock()
		return t.send(t.s.commandsUpdate())
	case st.Delay != nil:
		if err := t.a.opts.Sleep(t.ctx, time.Duration(st.Delay.Seconds*float64(time.Second))); err != nil {
			return errCancelled
		}
		return nil
	case st.Usage != nil:
		u := &acp.UsageUpdate{Used: st.Usage.Used, Size: st.Usage.Size}
		if st.Usage.Cost != 0 || st.Usage.Currency != "" {
			cur := st.Usage.Currency
			if cur == "" {
				cur = "USD"
			}
			u.Cost = &acp.Cost{Amount: st.Usage.Cost, Currency: cur}
		}
		return t.send(acp.SessionUpdate{UsageUpdate: u})
	case st.Info != nil:
		t.s.mu.Lock()
		t.s.title = st.Info.Title
		t.s.mu.Unlock()
		return t.send(acp.SessionUpdate{SessionInfoUpdate: &acp.SessionInfoUpdate{
			Title:     acp.Some(st.Info.Title),
			UpdatedAt: acp.Some(now().UTC().Format(time.RFC3339)),
		}})
	case st.Stop != nil:
		t.stop = acp.StopReason(st.Stop.Reason)
		return nil
	case st.Crash != nil:
		return t.a.crash(st.Crash)
	case st.Hang != nil:
		// A wedged agent: deaf to session/cancel, gone only with the process.
		t.a.log.Debug("builtin agent: hanging until the connection ends", "session", t.s.id)
		return t.a.wedged()
	case st.SpendAfterCancel != nil:
		// Told to stop, it spends once more, then wedges like hang.
		select {
		case <-t.ctx.Done():
			if t.a.ctx.Err() == nil {
				u := st.SpendAfterCancel
				if err := t.send(acp.SessionUpdate{UsageUpdate: &acp.UsageUpdate{Used: u.Used, Size: u.Size}}); err != nil {
					return err
				}
			}
		case <-t.a.ctx.Done():
		}
		return t.a.wedged()
	case st.Garbage != nil:
		return t.a.out.writeRaw(func(w io.Writer) error {
			_, err := io.WriteString(w, st.Garbage.Line+"\n")
			return err
		})
	case st.Big != nil:
		id := t.s.nextID("msg")
		t.s.record(historyEntry{bigBytes: st.Big.Bytes, messageID: id})
		return t.a.streamBig(t.s, st.Big.Bytes, id)
	case st.LateUpdates != nil:
		t.late += st.LateUpdates.Count
		return nil
	case st.LatePermission != nil:
		t.latePerms = append(t.latePerms, st.LatePermission)
		return nil
	case st.Outside != nil:
		return t.outside(st.Outside)
	case st.Flood != nil:
		return t.flood(st.Flood.Count, st.Flood.PermissionEvery)
	case st.ElicitForm != nil:
		return t.elicitForm(st.ElicitForm)
	case st.ElicitURL != nil:
		return t.elicitURL(st.ElicitURL)
	case st.Extension != nil:
		return t.extension(st.Extension)
	case st.Limit != nil:
		return t.limit(st.Limit)
	}
	return fmt.Errorf("empty step")
}

// send records and sends one update.
func (t *turn) send(u acp.SessionUpdate) error {
	return t.a.send(t.s, u)
}

// say sends text as a one-chunk agent message of its own.
func (t *turn) say(text string) error {
	return t.sayIn(t.s.nextID("msg"), text)
}

// sayIn sends one agent_message_chunk of message id.
func (t *turn) sayIn(id, text string) error {
	return t.send(acp.SessionUpdate{AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock(text), MessageId: acp.Ptr(id)}})
}

func (t *turn) sendPlan(entries []acp.PlanEntry) error {
	t.s.mu.Lock()
	t.s.plan = entries
	t.s.mu.Unlock()
	return t.send(acp.SessionUpdate{Plan: &acp.Plan{Entries: append(acp.PlanEntryList(nil), entries...)}})
}

// chunks streams a text or thought step as n chunks of one message.
func (t *turn) chunks(ts *TextStep, thought bool) error {
	id := t.s.nextID("msg")
	for _, part := range splitChunks(ts.Text, ts.Chunks) {
		c := &acp.ContentChunk{Content: acp.TextBlock(part), MessageId: acp.Ptr(id)}
		u := acp.SessionUpdate{AgentMessageChunk: c}
		if thought {
			u = acp.SessionUpdate{AgentThoughtChunk: c}
		}
		if err := t.send(u); err != nil {
			return err
		}
	}
	return nil
}

// splitChunks splits s into n pieces of about equal rune counts, breaking
// after spaces when one is near so streamed words stay whole.
func splitChunks(s string, n int) []string {
	runes := []rune(s)
	if n <= 1 || len(runes) <= 1 {
		return []string{s}
	}
	n = min(n, len(runes))
	var out []string
	start := 0
	for i := 1; i < n; i++ {
		end := max(len(runes)*i/n, start+1)
		// Prefer to end just after a space within a few runes.
		for j := end; j < min(end+8, len(runes)-(n-i)); j++ {
			if runes[j-1] == ' ' {
				end = j
				break
			}
		}
		out = append(out, string(runes[start:end]))
		start = end
	}
	return append(out, string(runes[start:]))
}

// BigPattern is what a big step repeats: readable and free of JSON
// escapes, so that a reader of the text can count it.
const BigPattern = "tai builtin big chunk 0123456789 abcdefghijklmnopqrstuvwxyz. "

// streamBig writes one agent_message_chunk whose text is n bytes, straight
// to stdout: the envelope is marshalled once around a marker and the text is
// written in pieces, so a 100 MiB chunk never exists in memory.
func (a *agent) streamBig(s *session, n int64, messageID string) error {
	const marker = "\x00BIG\x00" // encodes as \u0000BIG\u0000, which no id can contain
	env, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  acp.MethodSessionUpdate,
		"params": acp.SessionNotification{SessionId: s.id, Update: acp.SessionUpdate{
			AgentMessageChunk: &acp.ContentChunk{Content: acp.TextBlock(marker), MessageId: acp.Ptr(messageID)},
		}},
	})
	if err != nil {
		return fmt.Errorf("big: %w", err)
	}
	encMarker, _ := json.Marshal(marker)
	encMarker = encMarker[1 : len(encMarker)-1]
	prefix, suffix, ok := strings.Cut(string(env), string(encMarker))
	if !ok {
		return errors.New("big: marker not found in envelope")
	}
	piece := []byte(strings.Repeat(BigPattern, (64<<10)/len(BigPattern)+1))
	return a.out.writeRaw(func(w io.Writer) error {
		if _, err := io.WriteString(w, prefix); err != nil {
			return err
		}
		for left := n; left > 0; {
			k := min(left, int64(len(piece)))
			if _, err := w.Write(piece[:k]); err != nil {
				return err
			}
			left -= k
		}
		_, err := io.WriteString(w, suffix+"\n")
		return err
	})
}

// flood sends count mixed updates as fast as the client reads them. They are
// not recorded: a benchmark session must not grow without bound.
func (t *turn) flood(count, permissionEvery int) error {
	var lastTool string
	for i := range count {
		if i%256 == 0 && t.ctx.Err() != nil {
			return errCancelled
		}
		if permissionEvery > 0 && i > 0 && i%permissionEvery == 0 {
			_, err := t.askPermission(acp.ToolCallUpdate{
				ToolCallId: lastTool, Title: acp.Ptr("Flood permission " + lastTool),
				Kind: acp.Ptr(acp.ToolKindOther), Status: acp.Ptr(acp.ToolCallPending),
			}, standardOptions)
			if err != nil {
				return err
			}
		}
		var u acp.SessionUpdate
		switch i % 4 {
		case 0:
			u.AgentMessageChunk = &acp.ContentChunk{Content: acp.TextBlock(fmt.Sprintf("flood %d ", i))}
		case 1:
			lastTool = fmt.Sprintf("flood-%d", i)
			u.ToolCall = &acp.ToolCall{ToolCallId: lastTool, Title: "Flood " + lastTool, Kind: acp.ToolKindOther, Status: acp.ToolCallInProgress}
		case 2:
			u.ToolCallUpdate = &acp.ToolCallUpdate{ToolCallId: lastTool, Status: acp.Ptr(acp.ToolCallCompleted)}
		case 3:
			u.Plan = &acp.Plan{Entries: acp.PlanEntryList{{
				Content: fmt.Sprintf("Flood %d/%d", i+1, count), Priority: acp.PlanPriorityLow, Status: acp.PlanStatusInProgress,
			}}}
		}
		if err := t.a.notify(t.s, u); err != nil {
			return err
		}
	}
	return nil
}

// extension sends an update or a request ACP v1 does not define.
func (t *turn) extension(x *ExtensionStep) error {
	if x.Update != nil {
		raw, err := json.Marshal(x.Update)
		if err != nil {
			return err
		}
		kind, _ := x.Update["sessionUpdate"].(string)
		return t.send(acp.SessionUpdate{Unknown: &acp.UnknownVariant{Kind: kind, Raw: raw}})
	}
	params := x.Params
	if params == nil {
		params = map[string]any{}
	}
	params["sessionId"] = t.s.id
	var res json.RawMessage
	if err := t.call(x.Method, params, &res); err != nil {
		if errors.Is(err, errCancelled) {
			return err
		}
		return t.say(fmt.Sprintf("extension %s failed: %v", x.Method, err))
	}
	return t.say(fmt.Sprintf("extension %s answered: %s", x.Method, res))
}

// limit fails the turn with the error an agent at its usage limit
// answers session/prompt with (see LimitStep), unless the session has
// already met it Times times.
func (t *turn) limit(ls *LimitStep) error {
	t.s.mu.Lock()
	t.s.limitHits++
	hits := t.s.limitHits
	t.s.mu.Unlock()
	if ls.Times > 0 && hits > ls.Times {
		return nil
	}
	msg := ls.Message
	if msg == "" {
		msg = "You've hit your limit"
		if ls.ResetsAt != "" {
			msg += " · resets " + ls.ResetsAt
		}
	}
	var data json.RawMessage
	switch ls.ErrorKind {
	case "none":
	case "":
		data, _ = json.Marshal(map[string]string{"errorKind": "rate_limit"})
	default:
		data, _ = json.Marshal(map[string]string{"errorKind": ls.ErrorKind})
	}
	return &limitError{&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: " + msg, Data: data}, ls}
}

// limitError carries a limit step's answer out of the script.
type limitError struct {
	rpc  *jsonrpc.Error
	step *LimitStep
}

func (e *limitError) Error() string { return e.rpc.Error() }
