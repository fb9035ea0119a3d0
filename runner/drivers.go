package runner

import (
	"context"
	"slices"
	"strings"

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

// drivers is the table of the drivers this build can run, the default
// (ACP) first: each name and how it launches a session.
var drivers = []struct {
	name   driver.Name
	launch func(ctx context.Context, l driver.Launch) (Session, error)
}{
	{acp.Name, func(ctx context.Context, l driver.Launch) (Session, error) { return acp.Launch(ctx, l) }},
	{streamjson.Name, func(ctx context.Context, l driver.Launch) (Session, error) { return streamjson.Launch(ctx, l) }},
	{pty.Name, func(ctx context.Context, l driver.Launch) (Session, error) { return pty.Launch(ctx, l) }},
	{a2a.Name, func(ctx context.Context, l driver.Launch) (Session, error) { return a2a.Launch(ctx, l) }},
}

// Drivers lists the drivers this build can run.
func Drivers() []driver.Name {
	out := make([]driver.Name, len(drivers))
	for i, d := range drivers {
		out[i] = d.name
	}
	return out
}

// DriverList is Drivers as one line, for errors: "acp, stream-json, ...".
func DriverList() string {
	var b strings.Builder
	for i, d := range Drivers() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(d))
	}
	return b.String()
}

func known(name driver.Name) bool { return slices.Contains(Drivers(), name) }

func (r *run) driverName() driver.Name {
	if r.o.Driver == "" {
		return acp.Name
	}
	return r.o.Driver
}

// startDriver starts a session with the named driver (ACP when the name
// is not in the table: the runner checked it before).
func startDriver(ctx context.Context, name driver.Name, l driver.Launch) (Session, error) {
	for _, d := range drivers {
		if d.name == name {
			return d.launch(ctx, l)
		}
	}
	return drivers[0].launch(ctx, l)
}
