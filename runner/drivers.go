package runner

import (
	"context"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/driver/a2a"
	"github.com/tai-dev/tai/driver/acp"
	"github.com/tai-dev/tai/driver/pty"
	"github.com/tai-dev/tai/driver/streamjson"
)

// Session is what the runner needs of a live session, whatever the driver.
type Session interface {
	driver.Session
	CurrentMode() string
	SetModel(ctx context.Context, model string) error
	Exited() <-chan struct{}
	Pid() int
}

// Drivers lists the drivers this build can run.
func Drivers() []string { return []string{acp.Name, streamjson.Name, pty.Name, a2a.Name} }

func known(name string) bool {
	for _, d := range Drivers() {
		if d == name {
			return true
		}
	}
	return false
}

func (r *run) driverName() string {
	if r.o.Driver == "" {
		return acp.Name
	}
	return r.o.Driver
}

// startDriver starts a session with the named driver.
func startDriver(ctx context.Context, name string, l driver.Launch) (Session, error) {
	switch name {
	case streamjson.Name:
		return streamjson.Launch(ctx, l)
	case pty.Name:
		return pty.Launch(ctx, l)
	case a2a.Name:
		return a2a.Launch(ctx, l)
	default:
		return acp.Launch(ctx, l)
	}
}
