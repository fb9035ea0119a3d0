package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tai-dev/tai/e2e/internal/build"
)

// An agent that reports its quotas (the ACP quotas draft's quota_update,
// which tai reads without advertising it) and then fails its prompt parks
// the run with the reset the update gave: when the error says nothing of
// a limit, the update is what makes it one; when the error names a limit
// but not when it clears, the update gives the time. A later update that
// says nothing is used up takes it back. Default sandbox, no --dir, a
// user-like HOME.
func TestQuotaUpdateGivesTheLimitAndItsReset(t *testing.T) {
	reset := time.Now().Add(5 * time.Hour).UTC().Truncate(time.Second)
	usedUp := `{sessionUpdate: quota_update, quotas: [{name: weekly, used: 100, limit: 100, resetsAt: "` + reset.Format(time.RFC3339) + `"}]}`
	fine := `{sessionUpdate: quota_update, quotas: [{name: weekly, used: 10, limit: 100, resetsAt: "` + reset.Format(time.RFC3339) + `"}]}`
	tests := []struct {
		name   string
		steps  string
		code   int
		source string
	}{
		{"a plain error after a used-up quota", "  - extension: {update: " + usedUp + "}\n  - limit: {message: upstream failed, error_kind: none}\n", 75, "quota_update"},
		{"a limit error without a time", "  - extension: {update: " + usedUp + "}\n  - limit: {message: rate limited}\n", 75, "acp_error"},
		{"a quota no longer used up", "  - extension: {update: " + usedUp + "}\n  - extension: {update: " + fine + "}\n  - limit: {message: upstream failed, error_kind: none}\n", 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			ws := filepath.Join(tmp, "work")
			if err := os.Mkdir(ws, 0o700); err != nil {
				t.Fatal(err)
			}
			s := filepath.Join(tmp, "script.yaml")
			if err := os.WriteFile(s, []byte("steps:\n  - text: \"working \"\n"+tt.steps+"  - text: done\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			o := build.Run(t, taiBin, ws, userEnv(t, tmp), "run", "--agent-cmd", taiBin+" agent builtin --script "+s, "--no-notify", "-o", "json", "go")
			var r parkedResult
			if err := json.Unmarshal([]byte(o.Stdout), &r); err != nil {
				t.Fatalf("exit %d, stdout not JSON (%v):\n%s\n%s", o.Code, err, o.Stdout, o.Stderr)
			}
			if o.Code != tt.code {
				t.Fatalf("exit %d (%s), want %d\n%s", o.Code, r.Status, tt.code, o.Stdout)
			}
			if tt.code != 75 {
				if r.Parked != nil {
					t.Errorf("parked %+v after the quota was fine again", *r.Parked)
				}
				return
			}
			if r.Parked == nil || r.Parked.Source != tt.source || !r.Parked.ResetsAt.Equal(reset) || r.Parked.Kind == "" {
				t.Fatalf("parked = %+v, want from %s resetting %v\n%s", r.Parked, tt.source, reset, o.Stdout)
			}
		})
	}
}
