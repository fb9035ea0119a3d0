package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
			root := newRoot(app.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
			root.SetArgs(args)
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
	root := newRoot(app.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	root.SetArgs([]string{"run", "--no-such-flag"})
	if code := app.Report(&errb, execute(context.Background(), root)); code != 2 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
