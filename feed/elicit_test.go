package feed

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/elicit"
	"github.com/tai-dev/tai/policy"
)

// form is a terminal's form that answers what is sent on it.
type form struct {
	asked  chan struct{}
	answer chan driver.ElicitationAnswer
}

func (f form) Answer(ctx context.Context, _ driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	f.asked <- struct{}{}
	select {
	case a := <-f.answer:
		return a, nil
	case <-ctx.Done():
		return driver.ElicitationAnswer{Action: driver.ElicitCancel}, nil
	}
}

var dbForm = driver.ElicitationRequest{ID: "4", Session: "s1", Mode: driver.ElicitForm, Message: "Which database?", Fields: []driver.ElicitField{
	{Name: "database", Type: "string", Enum: []string{"dev", "staging", "prod"}, Default: "dev", Required: true},
	{Name: "port", Type: "integer"},
}}

// An elicitation raced between the terminal and the feed: it waits in
// /state, a bad form is refused with a 400 and stays pending, the first
// answer wins with its channel, the others see it closed, a second answer
// is a 409.
func TestElicitationRace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		byFeed  bool
		wantVia ask.Via
		want    driver.ElicitationAnswer
	}{
		{"dashboard answers", true, ask.ViaDashboard, driver.ElicitationAnswer{Action: driver.ElicitAccept, Content: map[string]any{"database": "staging", "port": int64(5432)}, DecidedBy: "human"}},
		{"terminal answers", false, ask.ViaTerminal, driver.ElicitationAnswer{Action: driver.ElicitDecline}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, t.TempDir(), "run-elicit")
			c := Dial(s.Path())
			defer c.Close()
			term := form{asked: make(chan struct{}, 1), answer: make(chan driver.ElicitationAnswer)}
			race := elicit.Race(elicit.Channel(ask.ViaTerminal, term), s.Elicitor())
			type out struct {
				a   driver.ElicitationAnswer
				err error
			}
			res := make(chan out)
			go func() {
				a, err := race.Answer(policy.WithAsker(context.Background(), "task api"), dbForm)
				res <- out{a, err}
			}()
			<-term.asked
			at, data := waitFrame(t, c, 0, FrameElicitOpened)
			var opened ElicitFrame
			if err := json.Unmarshal(data, &opened); err != nil || opened.Elicitation.Task != "api" || len(opened.Elicitation.Request.Fields) != 2 {
				t.Fatalf("elicit.opened %s: %v", data, err)
			}
			id := opened.Elicitation.ID
			st, err := c.State(context.Background())
			if err != nil || len(st.Elicitations) != 1 || st.Elicitations[0].ID != id || st.Elicitations[0].Request.Message != "Which database?" {
				t.Fatalf("state %+v, %v", st, err)
			}
			var se *StatusError
			if err := c.AnswerElicitation(context.Background(), id, "accept", map[string]any{"database": "qa"}, ""); !errors.As(err, &se) || se.Code != 400 || !strings.Contains(se.Msg, "not one of") {
				t.Fatalf("an invalid form: %v", err)
			}
			if st, _ := c.State(context.Background()); len(st.Elicitations) != 1 {
				t.Fatal("an invalid form took the elicitation")
			}
			if tc.byFeed {
				if err := c.AnswerElicitation(context.Background(), id, "accept", map[string]any{"database": "staging", "port": 5432}, string(ask.ViaDashboard)); err != nil {
					t.Fatal(err)
				}
			} else {
				term.answer <- driver.ElicitationAnswer{Action: driver.ElicitDecline}
			}
			r := <-res
			tc.want.Via = string(tc.wantVia)
			r.a.Reason = ""
			if r.err != nil || !equalJSON(r.a, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", r.a, r.err, tc.want)
			}
			_, data = waitFrame(t, c, at, FrameElicitClosed)
			var closed ElicitClosed
			if err := json.Unmarshal(data, &closed); err != nil || closed.Via != string(tc.wantVia) || closed.ID != id || closed.Action != string(tc.want.Action) {
				t.Fatalf("elicit.closed %s: %v", data, err)
			}
			if strings.Contains(string(data), "staging") {
				t.Fatalf("the closing frame carries the form's values: %s", data)
			}
			if err := c.AnswerElicitation(context.Background(), id, "decline", nil, ""); !errors.As(err, &se) || se.Code != 409 || !strings.Contains(se.Msg, string(tc.wantVia)) {
				t.Fatalf("a second answer: %v", err)
			}
			if st, _ := c.State(context.Background()); len(st.Elicitations) != 0 {
				t.Fatalf("still pending: %+v", st.Elicitations)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestElicitationRefusals(t *testing.T) {
	s := open(t, t.TempDir(), "run-bad")
	c := Dial(s.Path())
	defer c.Close()
	for _, tc := range []struct{ id, action, via string }{
		{"el-9", "accept", ""},
		{"el-1", "maybe", ""},
		{"el-1", "decline", "telepathy"},
	} {
		var se *StatusError
		if err := c.AnswerElicitation(context.Background(), tc.id, tc.action, nil, tc.via); !errors.As(err, &se) || se.Code/100 != 4 {
			t.Errorf("%+v: %v, want a 4xx", tc, err)
		}
	}
}

// The budgets in /state: what is used up is named.
func TestBudgetState(t *testing.T) {
	s := open(t, t.TempDir(), "fleet-budget")
	s.SetBudget(Budget{Limit: Limits{Tokens: 1000, Turns: 4}, Used: Usage{Tokens: 1200, Turns: 2}})
	s.SetTask(Task{ID: "api", Status: "running", Budget: &Budget{Limit: Limits{Cost: 0.5}, Used: Usage{Cost: 0.1}}})
	c := Dial(s.Path())
	defer c.Close()
	st, err := c.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if b := st.Budget; b == nil || b.Limit.Tokens != 1000 || b.Used.Tokens != 1200 || strings.Join(b.Over, ",") != "tokens" || b.Updated.IsZero() {
		t.Fatalf("fleet budget %+v", st.Budget)
	}
	if b := st.Tasks[0].Budget; b == nil || b.Limit.Cost != 0.5 || len(b.Over) != 0 {
		t.Fatalf("task budget %+v", b)
	}
}
