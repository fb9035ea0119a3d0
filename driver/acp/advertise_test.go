package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// schemaPath is the ACP schema of the TypeScript SDK the e2e suite
// installs (scripts/install-peers.sh): TAI_TS_AGENT's package.
func schemaPath(t *testing.T) string {
	t.Helper()
	agent := os.Getenv("TAI_TS_AGENT")
	if agent == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("TAI_TS_AGENT is not set but CI is (scripts/test.sh sets it)")
		}
		t.Skip("TAI_TS_AGENT is not set: run scripts/install-peers.sh")
	}
	// .../node_modules/@agentclientprotocol/sdk/dist/examples/agent.js
	return filepath.Join(filepath.Dir(agent), "..", "..", "schema", "schema.json")
}

// What tai handles of the capability-gated parts of ACP is what it
// advertises: every gated update kind the driver shows or passes on is
// behind a capability the schema names and the initialize request sets.
func TestAdvertisedMatchesTheSchema(t *testing.T) {
	b, err := os.ReadFile(schemaPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	inSchema := func(path string) bool {
		parts := strings.Split(path, ".")
		def := "ClientCapabilities"
		for i, p := range parts {
			raw, ok := s.Defs[def].Properties[p]
			if !ok {
				return false
			}
			if i == len(parts)-1 {
				return true
			}
			// The property's type: its $ref (directly or in an anyOf).
			var ref struct {
				Ref   string `json:"$ref"`
				AnyOf []struct {
					Ref string `json:"$ref"`
				} `json:"anyOf"`
			}
			_ = json.Unmarshal(raw, &ref)
			for _, a := range ref.AnyOf {
				if a.Ref != "" {
					ref.Ref = a.Ref
				}
			}
			def = strings.TrimPrefix(ref.Ref, "#/$defs/")
		}
		return false
	}
	sent, _ := json.Marshal(map[string]any{"session": handledSession})
	var adv map[string]any
	_ = json.Unmarshal(sent, &adv)
	advertised := func(path string) bool {
		var cur any = adv
		for _, p := range strings.Split(path, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return false
			}
			if cur, ok = m[p]; !ok {
				return false
			}
		}
		return cur != nil
	}
	paths := []string{"session.configOptions.boolean"}
	for kind, path := range gatedUpdates {
		if !inSchema(path) {
			t.Errorf("%s is gated by %s, which the schema does not name", kind, path)
		}
		paths = append(paths, path)
	}
	for _, p := range paths {
		if !inSchema(p) {
			t.Errorf("the schema has no clientCapabilities.%s", p)
		}
		if !advertised(p) {
			t.Errorf("tai handles what clientCapabilities.%s gates but does not advertise it: %s", p, sent)
		}
	}
}
