package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/app"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The help of every command is golden: a flag renamed or a default changed
// is a visible diff.
func TestHelpGolden(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"run", "--help"}, {"agents", "--help"}, {"agent", "builtin", "--help"},
		{"model", "serve", "--help"}, {"audit", "verify", "--help"}, {"audit", "show", "--help"}, {"version", "--help"},
		{"fleet", "--help"}, {"fleet", "run", "--help"}, {"fleet", "resume", "--help"}, {"fleet", "status", "--help"},
		{"fleet", "plan", "--help"}, {"worktree", "list", "--help"}, {"worktree", "gc", "--help"}, {"sessions", "--help"},
		{"config", "show", "--help"}, {"doctor", "--help"}, {"hub", "--help"}, {"worker", "--help"},
	} {
		name := strings.ReplaceAll(strings.Join(args, "_"), "-", "")
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			root := newRoot(app.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
			if err := root.Execute(); err != nil {
				t.Fatalf("%v: %s", err, errb.String())
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/tai -update)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("%s differs (run with -update to accept):\n%s", golden, out.String())
			}
		})
	}
}

func TestUsageExitCode(t *testing.T) {
	var out, errb bytes.Buffer
	root := newRoot(app.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, []string{"run", "--no-such-flag"})
	if code := app.Report(&errb, execute(context.Background(), root)); code != 2 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// Each command is built under its own name: a name in commands that
// differs from its command's would leave the command unreachable.
func TestCommandNames(t *testing.T) {
	std := app.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
	for _, c := range commands {
		if got := c.new(std, &app.Globals{}).Name(); got != c.name {
			t.Errorf("commands names %q a command named %q", c.name, got)
		}
	}
}

// A command line runs the same on the tree built for it (only the command
// it runs built whole) as on the whole tree: help, suggestions for an
// unknown command, flag errors and their exit codes, completion.
func TestLazyTreeRunsAsWhole(t *testing.T) {
	run := func(args []string, whole bool) (string, int) {
		var out, errb bytes.Buffer
		std := app.IO{In: strings.NewReader(""), Out: &out, Err: &errb}
		root := newRoot(std, args)
		if whole {
			root = newRoot(std, []string{})
			root.SetArgs(args)
		}
		code := app.Report(&errb, execute(context.Background(), root))
		return out.String() + "\x00" + errb.String(), code
	}
	for _, args := range [][]string{
		{"--version"}, {"-v", "--version"}, {"run", "--version"}, {"version", "--version"}, {"help"}, {"help", "run"}, {"completion", "bash"}, {"help", "completion"}, {"completion", "zsh", "--help"}, {"help", "fleet", "run"}, {"rn"}, {"nosuch"}, {"fleet", "rnu"}, {"fleet"},
		{"run", "--no-such-flag"}, {"-v", "run", "--no-such-flag"}, {"version", "--bogus"}, {"-v", "version", "extra"},
		{"--bogus", "run"}, {"--cap-speak"}, {"acp", "extra"}, {"agent", "builtin", "-h"},
		{cobra.ShellCompRequestCmd, ""}, {cobra.ShellCompRequestCmd, "r"}, {cobra.ShellCompRequestCmd, "run", "--dr"},
		{cobra.ShellCompRequestCmd, "run", "--driver", ""}, {cobra.ShellCompRequestCmd, "fleet", ""},
		{cobra.ShellCompRequestCmd, "-v", "run", "--app"}, {cobra.ShellCompNoDescRequestCmd, "help", ""},
		{cobra.ShellCompRequestCmd, "completion", ""}, {cobra.ShellCompRequestCmd, "run", "completion"},
	} {
		lazy, lazyCode := run(args, false)
		whole, wholeCode := run(args, true)
		if lazy != whole || lazyCode != wholeCode {
			t.Errorf("%q: exit %d on its own tree, %d on the whole tree:\n%s\n---\n%s", args, lazyCode, wholeCode, lazy, whole)
		}
	}
}
