package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --add-dir makes another directory a workspace root: the agent is told
// (additionalDirectories), and tai's file services serve it, where
// without it they refuse it as outside the workspace.
func TestAddDir(t *testing.T) {
	t.Parallel()
	extra := t.TempDir()
	if err := os.WriteFile(filepath.Join(extra, "lib.txt"), []byte("shared library notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := filepath.Join(t.TempDir(), "adddir.yaml")
	if err := os.WriteFile(sc, []byte(fmt.Sprintf("steps:\n  - read: %s\n  - write: {path: %s, content: \"out\\n\"}\n",
		filepath.Join(extra, "lib.txt"), filepath.Join(extra, "out.txt"))), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := builtinWith(sc)

	// --approve all: without --add-dir even an approved write outside is refused.
	o := tai(t, t.TempDir(), "run", "--agent-cmd", agent, "--approve", "all", "-o", "json", "go")
	r := jsonResult(t, o)
	if len(r.Errors) == 0 || r.Errors[0].Code != "outside_workspace" {
		t.Fatalf("without --add-dir: errors %+v", r.Errors)
	}
	if _, err := os.Stat(filepath.Join(extra, "out.txt")); err == nil {
		t.Fatal("without --add-dir the write outside went through")
	}

	// --approve reads: the read in the added dir is decided, the write outside still denied.
	o = tai(t, t.TempDir(), "run", "--agent-cmd", agent, "--approve", "reads", "--add-dir", extra, "-o", "json", "go")
	r = jsonResult(t, o)
	// The read is inside, so approve-reads allows it; the write is asked,
	// and denied with nobody to ask.
	if o.code != 5 || len(r.Errors) != 0 || len(r.Denials) != 1 || r.Denials[0].ToolKind != "edit" {
		t.Fatalf("--add-dir, approve reads: exit %d errors %+v denials %+v", o.code, r.Errors, r.Denials)
	}
	reads := 0
	for _, p := range r.Permissions {
		if p.ToolKind == "read" {
			reads++
			if p.Verdict != "allow" || p.DecidedBy != "default" {
				t.Fatalf("a read in the added root was not allowed as inside: %+v", p)
			}
		}
	}
	if reads == 0 {
		t.Fatalf("no read decided: %+v", r.Permissions)
	}
	// --approve all: with --add-dir the approved write outside lands.
	o = tai(t, t.TempDir(), "run", "--agent-cmd", agent, "--approve", "all", "--add-dir", extra, "-o", "json", "go")
	r = jsonResult(t, o)
	if o.code != 0 || len(r.FilesWritten) != 1 {
		t.Fatalf("--add-dir, approve all: exit %d %+v\n%s", o.code, r, o.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(extra, "out.txt")); err != nil || string(b) != "out\n" {
		t.Fatalf("out.txt = %q, %v", b, err)
	}
	if o := tai(t, t.TempDir(), "run", "--agent-cmd", agent, "--add-dir", filepath.Join(extra, "nope"), "go"); o.code != 2 || !strings.Contains(o.stderr, "--add-dir") {
		t.Fatalf("a missing --add-dir: exit %d %s", o.code, o.stderr)
	}
}
