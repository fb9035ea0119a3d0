package top

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/feed"
)

// FeedSource reads the live feeds in Dir or, with Addr, the one feed a
// run serves on TCP (tai run --listen) at Addr, with Token.
type FeedSource struct {
	Dir   string
	Addr  string // host:port
	Token string
}

// Runs snapshots every live feed. A feed that goes away mid-read is
// skipped: its run just ended. A TCP feed that cannot be read is an
// error: it was named.
func (s FeedSource) Runs(ctx context.Context) ([]feed.State, error) {
	if s.Addr != "" {
		c := feed.DialTCP(s.Addr, s.Token)
		defer c.Close()
		st, err := c.State(ctx)
		if err != nil {
			return nil, fmt.Errorf("the feed at %s: %w", s.Addr, err)
		}
		return []feed.State{st}, nil
	}
	eps, err := feed.List(s.Dir)
	if err != nil {
		return nil, err
	}
	var runs []feed.State
	for _, ep := range eps {
		c := feed.Dial(ep.Path)
		st, err := c.State(ctx)
		c.Close()
		if err != nil {
			continue
		}
		runs = append(runs, st)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Started.Before(runs[j].Started) })
	return runs, nil
}

func (s FeedSource) client(run string) (*feed.Client, error) {
	if s.Addr != "" {
		return feed.DialTCP(s.Addr, s.Token), nil
	}
	eps, err := feed.List(s.Dir)
	if err != nil {
		return nil, err
	}
	for _, ep := range eps {
		if ep.Run == run {
			return feed.Dial(ep.Path), nil
		}
	}
	return nil, fmt.Errorf("run %s is no longer running", run)
}

// Answer answers through the run's feed, as the dashboard.
func (s FeedSource) Answer(ctx context.Context, run, id, answer string) error {
	c, err := s.client(run)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Answer(ctx, id, answer, string(ask.ViaDashboard))
}

// AnswerQuestion answers through the run's feed, as the dashboard.
func (s FeedSource) AnswerQuestion(ctx context.Context, run, question, text string) error {
	c, err := s.client(run)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.AnswerQuestion(ctx, question, text, string(ask.ViaDashboard))
}

// AnswerElicitation answers through the run's feed, as the dashboard.
func (s FeedSource) AnswerElicitation(ctx context.Context, run, id, action string, content map[string]any) error {
	c, err := s.client(run)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.AnswerElicitation(ctx, id, action, content, string(ask.ViaDashboard))
}

// Follow streams the session's transcript from the start of the run.
func (s FeedSource) Follow(ctx context.Context, run, session string, fn func(string)) error {
	c, err := s.client(run)
	if err != nil {
		return err
	}
	defer c.Close()
	var msg strings.Builder
	flush := func() {
		if t := strings.TrimSpace(msg.String()); t != "" {
			for _, l := range strings.Split(t, "\n") {
				fn("  " + l)
			}
		}
		msg.Reset()
	}
	_, err = c.Events(ctx, 0, func(ev feed.Event) error {
		var f feed.TaggedEvent
		if ev.Name != "" || json.Unmarshal(ev.Data, &f) != nil || f.Session != session {
			return nil
		}
		if l := TranscriptLine(f.Event); l != "" {
			flush()
			fn(l)
		} else if f.Type == driver.EventMessage && f.Message.Role == driver.RoleAgent {
			msg.WriteString(f.Message.Text)
		}
		return nil
	})
	flush()
	if errors.Is(err, feed.ErrEnded) {
		return nil
	}
	return err
}

// TranscriptLine is the line `l` shows for an event other than message
// text ("" for none).
func TranscriptLine(ev driver.Event) string {
	switch ev.Type {
	case driver.EventToolCall:
		if ev.ToolCall.Status == "completed" || ev.ToolCall.Status == "failed" {
			return fmt.Sprintf("● %s [%s]", strings.TrimSpace(ev.ToolCall.Title), ev.ToolCall.Status)
		}
	case driver.EventPermissionAsked:
		return "? asks: " + strings.TrimSpace(ev.Permission.ToolCall.Title)
	case driver.EventPermissionDecided:
		d := ev.Decision
		by := string(d.DecidedBy)
		if d.Via != "" {
			by += " via " + d.Via
		}
		return fmt.Sprintf("  %s (%s)", d.Verdict, by)
	case driver.EventElicitationAsked:
		return "? asks for input: " + lastLine(ev.Elicitation.Message)
	case driver.EventElicitationAnswered:
		a := ev.ElicitationAnswer
		by := a.DecidedBy
		if a.Via != "" {
			by += " via " + a.Via
		}
		return fmt.Sprintf("  %s (%s)", a.Action, by)
	case driver.EventTurnEnded:
		return "— turn ended: " + ev.Turn.StopReason
	case driver.EventError:
		return "! " + ev.Error.Message
	}
	return ""
}
