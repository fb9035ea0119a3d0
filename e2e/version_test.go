package e2e

import (
	"encoding/json"
	"testing"
)

// tai version, --cap-manifest and the built-in agent's agentInfo.version
// (in the session.started frame) say the same version of the same binary.
func TestVersionsAgree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var v, m struct {
		Version string `json:"version"`
	}
	if o := tai(t, dir, "version", "-o", "json"); o.code != 0 || json.Unmarshal([]byte(o.stdout), &v) != nil {
		t.Fatalf("tai version -o json: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if o := tai(t, dir, "--cap-manifest"); o.code != 0 || json.Unmarshal([]byte(o.stdout), &m) != nil {
		t.Fatalf("tai --cap-manifest: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	o := tai(t, dir, "run", "--agent", "builtin", "-o", "stream-json", "/echo hi")
	var agent string
	for _, f := range frames(t, o.stdout) {
		if st, ok := f["started"].(map[string]any); ok && f["type"] == "session.started" {
			agent, _ = st["agent_version"].(string)
		}
	}
	if v.Version == "" || m.Version != v.Version || agent != v.Version {
		t.Fatalf("tai version %q, --cap-manifest %q, built-in agent %q", v.Version, m.Version, agent)
	}
}
