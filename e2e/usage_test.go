package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// ACP usage_update (context and cost) reaches the result, the latest
// update winning (its cost is the session's so far).
func TestUsageUpdateInResult(t *testing.T) {
	t.Parallel()
	sc := filepath.Join(t.TempDir(), "usage.yaml")
	if err := os.WriteFile(sc, []byte("steps:\n  - usage: {used: 100, size: 1000, cost: 0.1, currency: EUR}\n  - usage: {used: 300, size: 1000, cost: 0.25, currency: EUR}\n  - text: spent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := tai(t, t.TempDir(), "run", "--agent-cmd", builtinWith(sc), "-o", "json", "go")
	var r struct {
		ExitCode int `json:"exit_code"`
		Usage    struct {
			ContextUsed int64   `json:"context_used"`
			ContextSize int64   `json:"context_size"`
			Cost        float64 `json:"cost"`
			Currency    string  `json:"currency"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || r.ExitCode != 0 {
		t.Fatalf("%v %s", err, o.stdout)
	}
	if r.Usage.ContextUsed != 300 || r.Usage.ContextSize != 1000 || r.Usage.Cost != 0.25 || r.Usage.Currency != "EUR" {
		t.Fatalf("usage %+v", r.Usage)
	}
}
