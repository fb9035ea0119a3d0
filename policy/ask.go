package policy

import (
	"context"
	"errors"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
)

// Word is the answer in words, as a terminal echoes it and a channel that
// lost the race says it ("answered via dashboard: allow once").
func (a Answer) Word() string {
	switch a {
	case AllowOnce:
		return "allow once"
	case AllowAlways:
		return "allow always"
	case DenyAlways:
		return "deny always"
	}
	return "deny once"
}

// ViaPrompter is a Prompter that also says by which channel the human
// answered (the feed says which client). The engine records it.
type ViaPrompter interface {
	AskVia(ctx context.Context, req driver.PermissionRequest) (Answer, ask.Via, error)
}

// Reply is a permission channel's answer: the answer, where the channel
// asks (its Where, for the decision's reason), and, when the channel
// relayed another tai's decision (an editor that is a tai), whose.
type Reply struct {
	Answer  Answer
	Where   string
	Relayed *Relayed
	// Refusal: the channel answered with an error (a Refusal): a deny.
	Refusal *Refusal
}

// PermissionChannel is one channel of a permission race.
type PermissionChannel = ask.Channel[driver.PermissionRequest, Reply]

// Channel makes p a channel of a permission race, named via (a
// ViaPrompter names the channel of each answer itself).
func Channel(via ask.Via, p Prompter) PermissionChannel {
	return PermissionChannel{Via: via, Ask: func(ctx context.Context, req driver.PermissionRequest) (Reply, ask.Via, error) {
		return replyOf(ctx, p, req)
	}}
}

// replyOf asks p alone.
func replyOf(ctx context.Context, p Prompter, req driver.PermissionRequest) (Reply, ask.Via, error) {
	var r Reply
	var via ask.Via
	var err error
	switch p := p.(type) {
	case RelayingPrompter:
		r.Answer, r.Relayed, err = p.AskRelayed(ctx, req)
	case ViaPrompter:
		r.Answer, via, err = p.AskVia(ctx, req)
	default:
		r.Answer, err = p.Ask(ctx, req)
	}
	if w, ok := p.(interface{ Where() string }); ok {
		r.Where = w.Where()
	}
	var refusal *Refusal
	switch {
	case err != nil && ctx.Err() == nil && errors.As(err, &refusal):
		// A refusal given as an error is an answer too: a deny.
		r.Answer, r.Refusal, err = DenyOnce, refusal, nil
	case err != nil:
		r.Answer = DenyOnce
	}
	return r, via, err
}

// Race puts a permission request to every channel at once (see ask.Race):
// the first answer decides, the others are withdrawn, told who answered
// (an *ask.AnsweredElsewhere whose Answer is the winner's Answer).
func Race(channels ...PermissionChannel) Prompter { return raced(channels) }

type raced []PermissionChannel

func (r raced) reply(ctx context.Context, req driver.PermissionRequest) (Reply, ask.Via, error) {
	rep, via, err := ask.Race[driver.PermissionRequest, Reply]{Channels: r, Word: func(r Reply) string { return r.Answer.Word() }}.Ask(ctx, req)
	if err != nil {
		rep.Answer = DenyOnce
	}
	return rep, via, err
}

// Ask implements Prompter.
func (r raced) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	rep, _, err := r.reply(ctx, req)
	if err == nil && rep.Refusal != nil {
		return DenyOnce, rep.Refusal
	}
	return rep.Answer, err
}

// AskVia implements ViaPrompter.
func (r raced) AskVia(ctx context.Context, req driver.PermissionRequest) (Answer, ask.Via, error) {
	rep, via, err := r.reply(ctx, req)
	if err == nil && rep.Refusal != nil {
		return DenyOnce, via, rep.Refusal
	}
	return rep.Answer, via, err
}

// ask asks p, a race or one channel, for the engine.
func askReply(ctx context.Context, p Prompter, req driver.PermissionRequest) (Reply, ask.Via, error) {
	if r, ok := p.(raced); ok {
		return r.reply(ctx, req)
	}
	return replyOf(ctx, p, req)
}

// ElsewhereAnswer is the permission answer another channel gave, when
// ctx's request was withdrawn because that channel answered first.
func ElsewhereAnswer(cause error) (Answer, ask.Via, bool) {
	var e *ask.AnsweredElsewhere
	if !errors.As(cause, &e) {
		return DenyOnce, "", false
	}
	switch a := e.Answer.(type) {
	case Reply:
		return a.Answer, e.Via, true
	case Answer:
		return a, e.Via, true
	}
	return DenyOnce, e.Via, false
}

// askInfoKey carries why a question is asked to the channels.
type askInfoKey struct{}

// AskInfo is what a channel may show besides the request: who decides if
// nobody answers and why it was asked.
type AskInfo struct {
	By  string // the rule or mode that asks ("default", "rule:<id>")
	Why string
}

func withAskInfo(ctx context.Context, i AskInfo) context.Context {
	return context.WithValue(ctx, askInfoKey{}, i)
}

// AskInfoOf returns why the question in ctx is asked.
func AskInfoOf(ctx context.Context) AskInfo {
	i, _ := ctx.Value(askInfoKey{}).(AskInfo)
	return i
}

// askerKey carries who asks (fleet: the task) to the prompter.
type askerKey struct{}

// WithAsker names who a question is for ("task lint"), shown with it.
func WithAsker(ctx context.Context, who string) context.Context {
	if who == "" {
		return ctx
	}
	return context.WithValue(ctx, askerKey{}, who)
}

// AskerOf returns who the question in ctx is for (a fleet's "task lint").
func AskerOf(ctx context.Context) string {
	s, _ := ctx.Value(askerKey{}).(string)
	return s
}

// workspaceKey carries the asking engine's workspace to the prompter.
type workspaceKey struct{}

// WithWorkspace gives the workspace a question's paths are relative to,
// for a prompter shared by engines with different ones (a fleet's tasks).
func WithWorkspace(ctx context.Context, root string) context.Context {
	if root == "" {
		return ctx
	}
	return context.WithValue(ctx, workspaceKey{}, root)
}

// WorkspaceOf is the workspace WithWorkspace gave, or "": a relay passes
// it on with the question. The engine gives its own with every ask, so a
// prompter's diffs name files from the asking task's workspace.
func WorkspaceOf(ctx context.Context) string {
	r, _ := ctx.Value(workspaceKey{}).(string)
	return r
}
