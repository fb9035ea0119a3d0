package tracefile

import (
	"go/build"
	"slices"
	"testing"
)

// The transcript writer knows lines and redaction, not the protocol types:
// the literals a run redacts (its MCP servers' secrets) are its front end's.
func TestImportsNoDriver(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(pkg.Imports, "github.com/tai-dev/tai/driver") {
		t.Errorf("internal/tracefile imports driver: %v", pkg.Imports)
	}
}
