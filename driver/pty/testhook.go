//go:build tai_testhooks

package pty

import (
	"os"
	"time"
)

// A build with the tai_testhooks tag (the e2e suites') can play a TUI
// release the profile misses, so that a real TUI's turn is read by the
// fallback, and a reader of the screen slower than any loaded machine's
// (TAI_TEST_PTY_SLOW_READ, a duration), so that a long reply is seen to
// survive it.
func init() {
	testProfileMiss = os.Getenv("TAI_TEST_PTY_PROFILE_MISS") == "1"
	testSlowRead, _ = time.ParseDuration(os.Getenv("TAI_TEST_PTY_SLOW_READ"))
}
