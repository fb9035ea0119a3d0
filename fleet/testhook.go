//go:build tai_testhooks

package fleet

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/tai-dev/tai/worktree"
)

// A build with the tai_testhooks tag (the e2e suites') can play a disk
// that fills up as the first merge is recorded (TAI_TEST_FLEET_DISK_FULL=merged).
func init() {
	if os.Getenv("TAI_TEST_FLEET_DISK_FULL") != "merged" {
		return
	}
	full := false
	testWriteState = func(path string, data []byte) error {
		full = full || strings.Contains(string(data), `"status": "merged"`)
		if full {
			return fmt.Errorf("write %s: %w", path, syscall.ENOSPC)
		}
		return worktree.WriteFileAtomic(path, data, 0o600)
	}
}
