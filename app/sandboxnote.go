package app

import (
	"fmt"

	"github.com/tai-dev/tai/sandbox"
)

// sayUnconfined says on stderr, once per command, that --sandbox off runs
// the agent without tai's confinement: the flag may come from a script or
// an alias the user no longer reads.
func sayUnconfined(mode string, std IO) {
	if m, err := sandbox.ParseMode(mode); err == nil && m == sandbox.ModeOff {
		fmt.Fprintln(std.Err, "tai: sandbox off: the agent runs unconfined")
	}
}
