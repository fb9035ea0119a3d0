package runner

import (
	"context"
	"testing"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

// At a usage limit the run waits on the injected clock for as long as the
// agent said (or backs off when it did not), then resumes the same
// session; no real time passes.
func TestQuotaWaitsOnTheClockThenResumes(t *testing.T) {
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name, limit string
		wait        time.Duration
	}{
		{"reset given", `{resets_at: "2026-12-07T12:00:00Z", times: 1}`, 2 * time.Hour},
		{"no reset: backoff", `{message: "Rate limit reached", times: 1}`, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			clk := quartz.NewMock(t)
			clk.Set(start).MustWait(ctx)
			trap := clk.Trap().NewTimer("runner", "quota-wait")
			defer trap.Close()
			argv, env := agent(t, "steps:\n  - limit: "+tt.limit+"\n  - text: done\n")
			type out struct {
				res Result
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := Run(context.Background(), Options{
					Agent: "limited", Argv: argv, Env: env, Cwd: t.TempDir(),
					Prompt:  []driver.Content{driver.TextContent("go")},
					Decider: policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
					Clock:   clk, LateWindow: time.Hour,
					Quota: QuotaOptions{Wait: 3 * time.Hour},
				})
				done <- out{res, err}
			}()
			call := trap.MustWait(ctx)
			if call.Duration != tt.wait {
				t.Errorf("waits %s, want %s", call.Duration, tt.wait)
			}
			call.MustRelease(ctx)
			clk.Advance(tt.wait).MustWait(ctx)
			o := <-done
			if o.err != nil || o.res.Status != "ok" || o.res.Message != "done" || o.res.Parked != nil {
				t.Fatalf("result %+v err %v", o.res, o.err)
			}
		})
	}
}
