package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary be tai itself in the acceptance scripts
// (testdata/script/*.txtar): "tai" in a script runs main.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"tai": main})
}

// The acceptance scripts run the real tai main as users do: usage errors
// and their exit codes, the help, audit verify on a tampered log, sessions.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"exits": cmdExits},
		Setup: func(e *testscript.Env) error {
			e.Setenv("XDG_STATE_HOME", e.WorkDir+"/state")
			e.Setenv("XDG_CONFIG_HOME", e.WorkDir+"/config")
			e.Setenv("NO_COLOR", "1")
			return nil
		},
	})
}

// scriptEnv is what a command run by exits sees of the script's env.
var scriptEnv = []string{"PATH", "HOME", "TMPDIR", "WORK", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "NO_COLOR"}

// cmdExits runs "exits CODE PROG ARGS..." and fails unless PROG exits with
// exactly CODE; its stdout and stderr are the script's, for stdout/stderr
// to match.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	prog, err := exec.LookPath(args[1])
	ts.Check(err)
	cmd := exec.Command(prog, args[2:]...)
	cmd.Dir = ts.MkAbs(".")
	for _, k := range scriptEnv {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	got := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	_, _ = ts.Stdout().Write(out.Bytes())
	_, _ = ts.Stderr().Write(errb.Bytes())
	if got != want {
		ts.Fatalf("%s exited %d, want %d\nstderr: %s", args[1], got, want, errb.String())
	}
}
