package runner

import (
	"slices"
	"testing"

	"github.com/tai-dev/tai/driver"
)

// The build runs every driver there is a name for, in the names' order.
func TestDriversAreTheNames(t *testing.T) {
	if !slices.Equal(Drivers(), driver.Names()) {
		t.Fatalf("runner's drivers %q, driver.Names %q", Drivers(), driver.Names())
	}
	if got := DriverList(); got != "acp, stream-json, pty, a2a" {
		t.Errorf("DriverList() = %q", got)
	}
}
