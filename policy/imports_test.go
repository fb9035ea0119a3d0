package policy

import (
	"os/exec"
	"strings"
	"testing"
)

// policy decides and never prompts: the terminal (its raw mode, its
// rendering of a request) is the ask/tty channel's, so nothing policy
// depends on, even indirectly, may draw on or read a terminal.
func TestPolicyDoesNotPrompt(t *testing.T) {
	// go test puts its own go first on PATH.
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch dep {
		case "golang.org/x/term", "github.com/tai-dev/tai/render", "github.com/tai-dev/tai/ask/tty", "github.com/tai-dev/tai/internal/ttyin":
			t.Errorf("policy depends on %s: the terminal is ask/tty's", dep)
		}
	}
}
