package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A secret given with -e that the agent writes encoded (base64 in a Basic
// header, hex, URL-escaped) is redacted in the --trace transcript and the
// audit log as the plain one is. Default sandbox, user-like HOME.
func TestEncodedSecretRedacted(t *testing.T) {
	t.Parallel()
	const secret = "api-s3cret/Value+0123456789&more"
	forms := map[string]string{
		"basic":  base64.StdEncoding.EncodeToString([]byte("user:" + secret)),
		"base64": base64.RawURLEncoding.EncodeToString([]byte(secret)),
		"hex":    hex.EncodeToString([]byte(secret)),
		"url":    url.QueryEscape(secret),
	}
	j := newJail(t)
	dir := t.TempDir()
	trace, log := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "audit.jsonl")
	prompt := "/echo Authorization: Basic " + forms["basic"] + " b64=" + forms["base64"] + " hex=" + forms["hex"] + " q=" + forms["url"]
	o := runTai(t, j.ws, j.env(), "run", "-e", "SERVICE_API_TOKEN="+secret, "--trace", trace, "--audit", log, "-o", "json", prompt)
	if o.code != 0 {
		t.Fatalf("exit %d %s", o.code, o.stderr)
	}
	for what, path := range map[string]string{"--trace": trace, "audit log": log} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "[REDACTED]") {
			t.Errorf("%s: nothing redacted:\n%s", what, b)
		}
		for name, enc := range forms {
			// The encoded value's middle: at most a character or two at
			// either end shares a neighbour's bits.
			if mid := enc[4 : len(enc)-4]; strings.Contains(string(b), mid) {
				t.Errorf("%s holds the secret %s-encoded (%s)", what, name, mid)
			}
		}
	}
}
