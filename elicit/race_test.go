package elicit

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/internal/testutil"
)

// gated answers once the form's first prompt is on the terminal.
type gated struct {
	out  *testutil.Buffer
	seen chan struct{}
	ans  driver.ElicitationAnswer
}

func (g gated) Answer(ctx context.Context, _ driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	select {
	case <-g.seen:
	case <-ctx.Done():
		return driver.ElicitationAnswer{}, ctx.Err()
	}
	return g.ans, nil
}

// A race of the terminal's form and another channel: the other answers
// while the form waits for its first field; its answer (and channel) is
// the race's, the form is withdrawn and says so, and the terminal's line
// typed later goes to the next question, not lost.
func TestRaceWithdrawsTheForm(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &testutil.Buffer{}
	seen := make(chan struct{})
	f := &Form{In: pr, Out: writerFunc(func(p []byte) (int, error) {
		n, err := out.Write(p)
		if strings.Contains(out.String(), "database") {
			select {
			case <-seen:
			default:
				close(seen)
			}
		}
		return n, err
	})}
	other := gated{out: out, seen: seen, ans: driver.ElicitationAnswer{Action: driver.ElicitAccept, Content: map[string]any{"database": "prod", "port": 80}, DecidedBy: ByHuman}}
	r := Race(Channel("terminal", f), Channel("dashboard", other))
	ans, err := r.Answer(context.Background(), form)
	if err != nil || ans.Via != "dashboard" || ans.Action != driver.ElicitAccept || ans.Content["database"] != "prod" {
		t.Fatalf("race: %+v, %v", ans, err)
	}
	if !strings.Contains(out.String(), "(answered via dashboard: accept)") {
		t.Fatalf("the terminal did not say it was answered elsewhere:\n%s", out.String())
	}
	// The line the terminal's read was waiting for answers the next one.
	go func() { _, _ = io.WriteString(pw, "dev\n80\n\n\n\ny\n") }()
	ans, err = f.Answer(context.Background(), form)
	if err != nil || ans.Action != driver.ElicitAccept || ans.Content["database"] != "dev" {
		t.Fatalf("the next form: %+v, %v", ans, err)
	}
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// The first answer decides, whichever channel: a channel that abstains
// ends the race (the chain asks its next link), and an answer without a
// Via gets its channel's.
func TestRaceFirstAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		chans   Answerer
		wantVia string
		wantErr error
	}{
		{"one channel", Race(Channel("parent", &fixed{ans: driver.ElicitationAnswer{Action: driver.ElicitDecline}})), "parent", nil},
		{"abstains", Race(Channel("parent", &fixed{err: ErrPass})), "parent", ErrPass},
		{"none", Race(), "", ErrPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ans, err := tc.chans.Answer(context.Background(), form)
			if err != tc.wantErr && (tc.wantErr == nil || !strings.Contains(err.Error(), tc.wantErr.Error())) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if ans.Via != tc.wantVia {
				t.Fatalf("via %q, want %q", ans.Via, tc.wantVia)
			}
		})
	}
}
