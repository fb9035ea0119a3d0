package runner

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/quartz"
	"go.uber.org/goleak"

	"github.com/tai-dev/tai/builtin"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/policy"
)

// The test binary is also the agent: with TAI_RUNNER_AGENT set it runs
// tai's built-in agent with that script.
func TestMain(m *testing.M) {
	if scr := os.Getenv("TAI_RUNNER_AGENT"); scr != "" {
		s, err := builtin.LoadScript(scr)
		if err != nil {
			os.Exit(2)
		}
		if os.Getenv("TAI_RUNNER_STUBBORN") != "" {
			// Deaf to stdin EOF, SIGTERM and SIGHUP: only a kill ends it.
			signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		}
		// TAI_RUNNER_STATE keeps its sessions there, for a later process.
		_ = builtin.Serve(context.Background(), os.Stdin, os.Stdout, builtin.Options{Script: s, StateDir: os.Getenv("TAI_RUNNER_STATE")})
		if os.Getenv("TAI_RUNNER_STUBBORN") != "" {
			select {}
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func agent(t *testing.T, script string) ([]string, []string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	return []string{exe}, append(os.Environ(), "TAI_RUNNER_AGENT="+p)
}

// A wedged agent: the timeout fires on the injected clock, session/cancel
// is sent, the grace period runs out, and the agent is killed. No real
// time passes in either wait.
func TestTimeoutThenGraceThenKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clk := quartz.NewMock(t)
	timeoutTrap := clk.Trap().AfterFunc("runner", "timeout")
	defer timeoutTrap.Close()
	graceTrap := clk.Trap().NewTimer("runner", "cancel-grace")
	defer graceTrap.Close()

	argv, env := agent(t, "steps:\n  - text: working\n  - hang: true\n")
	working := make(chan struct{})
	var seen bool
	sink := sinkFunc(func(ev driver.Event) {
		if ev.Type == driver.EventMessage && !seen {
			seen = true
			close(working)
		}
	})
	type out struct {
		res Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := Run(context.Background(), Options{
			Agent: "hang", Argv: argv, Env: env, Cwd: t.TempDir(),
			Prompt:  []driver.Content{driver.TextContent("go")},
			Decider: policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
			Timeout: 10 * time.Minute, CancelGrace: time.Hour, Clock: clk, Sinks: []driver.Sink{sink},
		})
		done <- out{res, err}
	}()
	timeoutTrap.MustWait(ctx).MustRelease(ctx)
	<-working // the turn is under way, and the agent is wedged
	// The whole 10 minutes, at once.
	clk.Advance(10 * time.Minute).MustWait(ctx)
	graceTrap.MustWait(ctx).MustRelease(ctx)
	clk.Advance(time.Hour).MustWait(ctx)
	o := <-done
	if o.res.ExitCode != int(exitcode.Timeout) || o.res.Status != "timeout" {
		t.Fatalf("result %+v err %v", o.res, o.err)
	}
}

// --cancel-grace is the time from the cancel to the kill: an agent deaf to
// the cancel, to stdin EOF and to SIGTERM is killed once the grace has run
// out on the injected clock, with no further wait of the driver's own.
func TestCancelGraceIsTheTimeToTheKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard only
	defer cancel()
	clk := quartz.NewMock(t)
	timeoutTrap := clk.Trap().AfterFunc("runner", "timeout")
	defer timeoutTrap.Close()
	graceTrap := clk.Trap().NewTimer("runner", "cancel-grace")
	defer graceTrap.Close()
	// The drivers' graceful steps must not run after the grace: any of
	// their timers would hold the kill until the clock moved again.
	stopTrap := clk.Trap().NewTimer("agentproc", "stop")
	defer stopTrap.Close()

	argv, env := agent(t, "steps:\n  - text: working\n  - hang: true\n")
	env = append(env, "TAI_RUNNER_STUBBORN=1")
	working := make(chan struct{})
	var seen bool
	sink := sinkFunc(func(ev driver.Event) {
		if ev.Type == driver.EventMessage && !seen {
			seen = true
			close(working)
		}
	})
	done := make(chan Result, 1)
	go func() {
		res, _ := Run(context.Background(), Options{
			Agent: "stubborn", Argv: argv, Env: env, Cwd: t.TempDir(),
			Prompt:  []driver.Content{driver.TextContent("go")},
			Decider: policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
			Timeout: time.Second, CancelGrace: 3 * time.Second, Clock: clk, Sinks: []driver.Sink{sink},
		})
		done <- res
	}()
	timeoutTrap.MustWait(ctx).MustRelease(ctx)
	<-working
	clk.Advance(time.Second).MustWait(ctx)
	graceTrap.MustWait(ctx).MustRelease(ctx)
	clk.Advance(3 * time.Second).MustWait(ctx)
	select {
	case res := <-done:
		if res.ExitCode != int(exitcode.Timeout) {
			t.Fatalf("result %+v", res)
		}
	case c := <-stopTrapCalls(ctx, stopTrap):
		c.MustRelease(ctx)
		t.Fatal("after the grace, the kill waited on a driver's grace timer")
	case <-ctx.Done():
		t.Fatal("the agent was not killed when the grace ran out")
	}
}

func stopTrapCalls(ctx context.Context, trap *quartz.Trap) <-chan *quartz.Call {
	ch := make(chan *quartz.Call, 1)
	go func() {
		if c, err := trap.Wait(ctx); err == nil {
			ch <- c
		}
	}()
	return ch
}

// Ctrl-C (the parent context) with an agent that honours session/cancel:
// the turn ends cancelled within the grace period, exit 130.
func TestInterruptCancelsCleanly(t *testing.T) {
	argv, env := agent(t, "steps:\n  - text: working\n  - delay: 3600\n")
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once bool
	sink := sinkFunc(func(ev driver.Event) {
		if ev.Type == driver.EventMessage && !once {
			once = true
			close(started)
		}
	})
	done := make(chan Result, 1)
	go func() {
		res, _ := Run(ctx, Options{
			Agent: "slow", Argv: argv, Env: env, Cwd: t.TempDir(),
			Prompt:  []driver.Content{driver.TextContent("go")},
			Decider: policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
			Sinks:   []driver.Sink{sink},
		})
		done <- res
	}()
	<-started
	cancel()
	res := <-done
	if res.ExitCode != int(exitcode.Interrupted) || res.StopReason != driver.StopCancelled {
		t.Fatalf("result %+v", res)
	}
}

type sinkFunc func(driver.Event)

func (f sinkFunc) Emit(ev driver.Event) { f(ev) }

// Updates an agent sends after its prompt response belong to the turn:
// turn.ended follows them, in sequence order, every time. The late window
// runs on the injected clock and is let go only once the late updates are
// in, so the order does not depend on the machine's speed.
func TestTurnEndedFollowsLateUpdates(t *testing.T) {
	const late = 3
	argv, env := agent(t, "steps:\n  - text: main text\n  - late_updates: 3\n")
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		clk := quartz.NewMock(t)
		lateTrap := clk.Trap().NewTimer("runner", "late")
		var evs []driver.Event
		var messages int
		allIn := make(chan struct{})
		sink := sinkFunc(func(ev driver.Event) {
			evs = append(evs, ev)
			if ev.Type == driver.EventMessage {
				if messages++; messages == 1+late {
					close(allIn)
				}
			}
		})
		done := make(chan Result, 1)
		go func() {
			res, _ := Run(context.Background(), Options{
				Agent: "late", Argv: argv, Env: env, Cwd: t.TempDir(),
				Prompt:  []driver.Content{driver.TextContent("go")},
				Decider: policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
				Clock:   clk, Sinks: []driver.Sink{sink},
			})
			done <- res
		}()
		lateTrap.MustWait(ctx).MustRelease(ctx)
		<-allIn
		clk.Advance(150 * time.Millisecond).MustWait(ctx)
		res := <-done
		lateTrap.Close()
		cancel()
		if res.ExitCode != 0 {
			t.Fatalf("run %d: %+v", i, res)
		}
		ended := -1
		for j, ev := range evs {
			if j > 0 && ev.Seq <= evs[j-1].Seq {
				t.Fatalf("run %d: seq %d after %d", i, ev.Seq, evs[j-1].Seq)
			}
			switch ev.Type {
			case driver.EventTurnEnded:
				ended = j
			case driver.EventMessage:
				if ended >= 0 {
					t.Fatalf("run %d: a message (seq %d) after turn.ended (seq %d)", i, ev.Seq, evs[ended].Seq)
				}
			}
		}
		if ended < 0 {
			t.Fatalf("run %d: no turn.ended", i)
		}
	}
}

func TestCheckMode(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		available []string
		bad       bool
	}{
		{"plan", []string{"plan", "default"}, false},
		{"nosuch", []string{"plan", "default"}, true},
		{"anything", nil, false}, // the agent did not list its modes: it decides
	} {
		err := checkMode(tc.mode, tc.available)
		var um *UnknownModeError
		if got := errors.As(err, &um); got != tc.bad {
			t.Errorf("%s in %v: err %v", tc.mode, tc.available, err)
			continue
		}
		if tc.bad && (exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "plan, default")) {
			t.Errorf("%s: %v (exit %d)", tc.mode, err, exitcode.Of(err))
		}
	}
}

// After the last turn the late-update window ends when the agent has closed
// its stdout, not when a quiet period has passed: the mock clock never
// moves here, so a window waiting for quiet would never end. The updates
// the agent sends right after the prompt response are still in the result.
func TestLateWindowEndsWhenAgentIsDone(t *testing.T) {
	argv, env := agent(t, "steps:\n  - text: \"main text\"\n  - late_updates: 3\n")
	done := make(chan Result, 1)
	go func() {
		res, _ := Run(context.Background(), Options{
			Agent: "late", Argv: argv, Env: env, Cwd: t.TempDir(),
			Prompt:     []driver.Content{driver.TextContent("go")},
			Decider:    policy.New(policy.ApproveAll, policy.NonInteractiveDeny, nil),
			LateWindow: time.Hour, Clock: quartz.NewMock(t),
		})
		done <- res
	}()
	select {
	case res := <-done:
		if res.ExitCode != 0 || res.Message != "main text\n\nlate update 1/3 late update 2/3 late update 3/3 " {
			t.Fatalf("exit %d message %q", res.ExitCode, res.Message)
		}
	case <-time.After(2 * time.Minute): // a hang guard, not a timing assertion
		t.Fatal("the late window waited for a quiet period the clock never gives")
	}
}
