package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/internal/atomicfile"
	"github.com/tai-dev/tai/modelserver"
)

// ModelServeFlags are `tai model serve`'s flags.
type ModelServeFlags struct {
	Script   string
	Addr     string
	Log      string
	Cwd      string
	PortFile string
	Verbose  bool
}

// ModelServe runs the scripted model server until interrupted. It prints
// the base URL on stdout (and to --port-file), so scripts can point agents
// at it.
func ModelServe(ctx context.Context, f ModelServeFlags, std IO) error {
	opts := modelserver.Options{ScriptPath: f.Script, Cwd: f.Cwd, Logger: newLogger(std.Err, f.Verbose)}
	if f.Script != "" {
		s, err := modelserver.LoadScript(f.Script)
		if err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("model serve: %w", err))
		}
		opts.Script = s
	}
	if f.Log != "" {
		lf, err := os.OpenFile(f.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("model serve: %w", err))
		}
		defer lf.Close()
		opts.Log = lf
	}
	srv, err := modelserver.New(opts)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("model serve: %w", err))
	}
	defer srv.Close()
	url, err := srv.Start(ctx, f.Addr)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("model serve: %w", err))
	}
	fmt.Fprintln(std.Out, url)
	if f.PortFile != "" {
		_ = atomicfile.Write(filepath.Clean(f.PortFile), []byte(url+"\n"), 0o644)
	}
	<-ctx.Done()
	return nil
}
