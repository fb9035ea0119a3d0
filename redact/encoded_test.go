package redact

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// A secret the redactor knows is scrubbed in the encodings text carries it
// in: hex, URL escapes and base64 (both alphabets, padded or not, alone or
// inside a longer base64 string at any alignment). hidden is how many of
// the encoded secret's characters must be gone: all of them but the one or
// two a neighbour's bits share.
func TestEncodedLiterals(t *testing.T) {
	const secret = "s3cr3t-Pa55/w0rd+with&odd=chars?"
	n := len(secret)
	b64 := func(enc *base64.Encoding, s string) string { return enc.EncodeToString([]byte(s)) }
	raw := base64.RawStdEncoding
	for _, tc := range []struct {
		name, in string
		hidden   int
	}{
		{"hex", "id=" + hex.EncodeToString([]byte(secret)) + " end", 2 * n},
		{"HEX", "id=" + strings.ToUpper(hex.EncodeToString([]byte(secret))) + " end", 2 * n},
		{"query escape", "GET /cb?id=x&next=" + url.QueryEscape(secret) + "&z=1", len(url.QueryEscape(secret))},
		{"path escape", "GET /v1/" + url.PathEscape(secret) + "/items", len(url.PathEscape(secret))},
		{"base64", "value: " + b64(base64.StdEncoding, secret) + "\n", len(b64(base64.StdEncoding, secret))},
		{"base64url", "value: " + b64(base64.URLEncoding, secret) + "\n", len(b64(base64.URLEncoding, secret))},
		{"raw base64url", "value: " + b64(base64.RawURLEncoding, secret) + "\n", len(b64(base64.RawURLEncoding, secret))},
		{"basic auth", "Authorization: Basic " + b64(base64.StdEncoding, "user:"+secret), n*8/6 - 3},
		{"offset 1", "blob " + b64(raw, "a"+secret+"tail") + " end", n*8/6 - 3},
		{"offset 2", "blob " + b64(raw, "ab"+secret+"tail") + " end", n*8/6 - 3},
		{"offset 0 inside", "blob " + b64(raw, "abc"+secret+"tail") + " end", n*8/6 - 3},
		{"url base64 offset 1", "blob " + b64(base64.RawURLEncoding, "a"+secret+"tail") + " end", n*8/6 - 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := New(Options{Literals: []string{secret}})
			if err != nil {
				t.Fatal(err)
			}
			out := r.String(tc.in)
			if !strings.Contains(out, Replacement) {
				t.Fatalf("not redacted: %q", out)
			}
			if gone := len(tc.in) - len(out) + len(Replacement); gone < tc.hidden {
				t.Errorf("%d characters hidden, want %d or more: %q", gone, tc.hidden, out)
			}
			// In a JSON document too, which stays valid.
			doc, _ := json.Marshal(map[string]string{"text": tc.in})
			got := r.Bytes(doc)
			if !json.Valid(got) || !strings.Contains(string(got), Replacement) {
				t.Errorf("JSON: %s", got)
			}
		})
	}
}

// Encodings of other values, and text that only looks encoded, are left
// alone.
func TestEncodedLiteralsLeaveTheRest(t *testing.T) {
	r, err := New(Options{Literals: []string{"hub-token-0123456789abcdef"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		base64.StdEncoding.EncodeToString([]byte("hub-token-9876543210fedcba")),
		hex.EncodeToString([]byte("another value entirely")),
		"deadbeef cafebabe 0123456789abcdef",
		strings.Repeat("Refactor the handler so that errors are wrapped; deadbeef 0x1f2e3d4c SGVsbG8sIHdvcmxkIQ== %2F%3F\n", 50),
	} {
		if out := r.String(in); out != in {
			t.Errorf("changed %.80q to %.80q", in, out)
		}
	}
}
