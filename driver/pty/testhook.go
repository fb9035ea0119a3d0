//go:build tai_testhooks

package pty

import "os"

// A build with the tai_testhooks tag (the e2e suites') can play a TUI
// release the profile misses, so that a real TUI's turn is read by the
// fallback.
func init() { testProfileMiss = os.Getenv("TAI_TEST_PTY_PROFILE_MISS") == "1" }
