package feed

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/tai-dev/tai/ask"
)

// pendings is the feed's registry of one kind of item waiting for a human
// (asks, questions, elicitations): each waits for one answer A, from a
// client's POST or, through its context, from another channel of the race.
// Every method but wait is called with the server's mu held.
type pendings[T, A any] struct {
	s      *Server
	what   string // "ask", "question", "elicitation": named in a 404
	prefix string // of the ids: "ask-", "q-", "el-"
	items  map[string]*entry[T, A]
	// closed is the frame that says an item was answered (ans set) or
	// withdrawn (reason set).
	closed func(item T, ans *A, via ask.Via, reason string) any
	// fromRace is the answer another channel of the race gave (an
	// ask.AnsweredElsewhere's Answer), when it is one of this kind.
	fromRace func(any) (A, bool)
	// word names an answer in a 409 ("already answered via dashboard: once").
	word func(A) string
}

type entry[T, A any] struct {
	id    string
	since time.Time
	item  T
	reply chan reply[A] // buffered 1: the one answer
}

type reply[A any] struct {
	a   A
	via ask.Via
}

// closedItem is what the feed remembers of an answered or withdrawn item,
// for the 409s of late POSTs.
type closedItem struct {
	answer, reason string
	via            ask.Via
}

func newPendings[T, A any](s *Server, what, prefix string, closed func(T, *A, ask.Via, string) any, word func(A) string, fromRace func(any) (A, bool)) *pendings[T, A] {
	return &pendings[T, A]{s: s, what: what, prefix: prefix, items: map[string]*entry[T, A]{}, closed: closed, word: word, fromRace: fromRace}
}

// open adds an item, built with its id and time, and publishes the frame
// opened makes of it.
func (p *pendings[T, A]) open(build func(id string, since time.Time) T, opened func(T) any) *entry[T, A] {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	e := &entry[T, A]{id: fmt.Sprintf("%s%d", p.prefix, s.seq), since: s.o.Clock.Now().UTC(), reply: make(chan reply[A], 1)}
	e.item = build(e.id, e.since)
	p.items[e.id] = e
	s.publishJSONLocked(opened(e.item))
	return e
}

// wait waits for e's answer until ctx ends; then e is withdrawn, and the
// closing frame says what ctx's cause says: the answer another channel of
// the race gave (and by which), or why it was withdrawn.
func (p *pendings[T, A]) wait(ctx context.Context, e *entry[T, A]) (A, ask.Via, error) {
	select {
	case r := <-e.reply:
		return r.a, r.via, nil // answer() closed it
	case <-ctx.Done():
	}
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := p.items[e.id]; !ok {
		// Answered here in the same instant: the race took the other.
		select {
		case r := <-e.reply:
			return r.a, r.via, nil
		default:
		}
	}
	delete(p.items, e.id)
	var ans *A
	var via ask.Via
	var reason string
	if el, ok := ask.Elsewhere(ctx); ok {
		if a, ok := p.fromRace(el.Answer); ok {
			ans, via = &a, el.Via
		}
	}
	c := closedItem{via: via}
	if ans != nil {
		c.answer = p.word(*ans)
	} else {
		via, c.via, reason = "", "", "withdrawn"
		if cause := context.Cause(ctx); cause != nil {
			reason = cause.Error()
		}
		c.reason = reason
	}
	s.done[e.id] = c
	s.publishJSONLocked(p.closed(e.item, ans, via, reason))
	var zero A
	return zero, "", ctx.Err()
}

// answer hands a client's answer to the item id, if it is pending; else
// it writes the 404 or 409 and returns false.
func (p *pendings[T, A]) answer(w http.ResponseWriter, id string, a A, via ask.Via) (T, bool) {
	s := p.s
	e, ok := p.items[id]
	if !ok {
		s.refuseLocked(w, id, p.what)
		var zero T
		return zero, false
	}
	delete(p.items, id)
	e.reply <- reply[A]{a, via}
	s.done[id] = closedItem{answer: p.word(a), via: via}
	s.publishJSONLocked(p.closed(e.item, &a, via, ""))
	return e.item, true
}

// get returns the pending item id.
func (p *pendings[T, A]) get(id string) (T, bool) {
	e, ok := p.items[id]
	if !ok {
		var zero T
		return zero, false
	}
	return e.item, true
}

// list returns the pending items, oldest first.
func (p *pendings[T, A]) list() []T {
	es := make([]*entry[T, A], 0, len(p.items))
	for _, e := range p.items {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool {
		if !es[i].since.Equal(es[j].since) {
			return es[i].since.Before(es[j].since)
		}
		return idLess(es[i].id, es[j].id)
	})
	out := make([]T, len(es))
	for i, e := range es {
		out[i] = e.item
	}
	return out
}

// idLess orders ids of the same prefix by their number: ask-9 before ask-10.
func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// refuseLocked answers a POST for an item that is not pending: 409 if it
// was answered or withdrawn, 404 if there never was one.
func (s *Server) refuseLocked(w http.ResponseWriter, id, what string) {
	if c, ok := s.done[id]; ok {
		msg := "already " + c.reason
		if c.via != "" {
			msg = fmt.Sprintf("already answered via %s: %s", c.via, c.answer)
		}
		httpError(w, http.StatusConflict, msg)
		return
	}
	httpError(w, http.StatusNotFound, fmt.Sprintf("no pending %s %q", what, id))
}
