package builtin

import (
	"context"
	"testing"
	"time"

	"github.com/tai-dev/tai/protocol/acp"
)

// spend_after_cancel parses as a step of its own kind, with usage fields.
func TestSpendAfterCancelStep(t *testing.T) {
	s, err := ParseScript([]byte("steps:\n  - usage: {used: 1, size: 10}\n  - spend_after_cancel: {used: 5, size: 10}\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := s.Steps[1]
	if st.Kind() != KindSpendAfterCancel || st.SpendAfterCancel == nil || st.SpendAfterCancel.Used != 5 {
		t.Fatalf("step %+v", st)
	}
	for _, bad := range []string{"{used: 5, bogus: 1}", "{used: -1}"} {
		if _, err := ParseScript([]byte("steps:\n  - spend_after_cancel: " + bad + "\n")); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}

// An agent deaf to the cancel stays deaf however early the cancel comes:
// one that lands while the step before is still running (a delay that
// finishes anyway, here) does not end the turn before the spend.
func TestSpendAfterCancelComingEarly(t *testing.T) {
	var c *testClient
	var sessID string
	sleep := func(ctx context.Context, _ time.Duration) error {
		_ = c.conn.Notify(context.Background(), acp.MethodSessionCancel, acp.CancelNotification{SessionId: sessID})
		<-ctx.Done() // the cancel reached the turn ...
		return nil   // ... and the delay ends as if it had not
	}
	c = startAgent(t, clientOpts{sleep: sleep, script: mustScript(t, `
- delay: 1
- spend_after_cancel: {used: 7, size: 10}
`)})
	c.initialize(fullCaps)
	sessID = c.newSession().SessionId
	go func() {
		// It never answers: it wedges after the spend, until the
		// connection ends at cleanup.
		_ = c.call(acp.MethodSessionPrompt, acp.PromptRequest{SessionId: sessID, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}, nil)
	}()
	waitFor(t, "the usage spent after the cancel", func() bool {
		for _, u := range c.updates() {
			if u.UsageUpdate != nil && u.UsageUpdate.Used == 7 {
				return true
			}
		}
		return false
	})
}
