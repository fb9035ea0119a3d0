package app

import (
	"sync/atomic"

	"github.com/tai-dev/tai/driver"
)

// oneAgent sets the process up for a command that drives one agent. Its
// hot path is one chain (the agent's reader, the session, the sinks), so
// one thread runs Go code: with more, every hand-off between goroutines
// wakes an idle thread, and the GC's idle workers take the cores the
// agent needs (the flood ran 2-4% faster this way on 2 cores, and 6% with
// a permission every 10 updates). A GOMAXPROCS in the environment wins.
func (o RunOptions) oneAgent() {
	if _, set := o.IO.lookup("GOMAXPROCS"); !set && o.SetProcs != nil {
		o.SetProcs(1)
	}
}

// streamEvents is how many events an agent sends before oneAgentStreaming
// sets the process up.
const streamEvents = 1000

// oneAgentStreaming is a sink that calls oneAgent at the agent's
// streamEvents-th event, once it streams. The switch stops the world and
// flushes the other thread's memory caches (1.4 ms and ~50 page faults
// here): made at the start, it was a sixth of the way from main to the
// agent's start, which a run of few events never pays back.
func (o RunOptions) oneAgentStreaming() driver.Sink {
	return newCountdown(streamEvents, o.oneAgent)
}

// countdown calls then at its left-th event.
type countdown struct {
	left atomic.Int64
	then func()
}

func newCountdown(n int64, then func()) *countdown {
	c := &countdown{then: then}
	c.left.Store(n)
	return c
}

func (c *countdown) Emit(driver.Event) {
	if c.left.Add(-1) == 0 {
		c.then()
	}
}
