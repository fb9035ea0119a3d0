//go:build tai_testhooks

package sandbox

import "os"

// A build with the tai_testhooks tag (the e2e suites') can play a kernel
// without Landlock.
func init() { testNoLandlock = os.Getenv("TAI_TEST_NO_LANDLOCK") == "1" }
