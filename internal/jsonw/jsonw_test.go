package jsonw

import (
	"bytes"
	"encoding/json"
	"testing"
)

// String writes what encoding/json writes with SetEscapeHTML(false).
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\s/", "\x00\x01\b\f\n\r\t\x1f\x7f", "é漢\u2028\u2029<&>", "\xff\xfe bad \xc3", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := String(&got, s); err != nil {
			t.Fatal(err)
		}
		if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got.Bytes(), w) {
			t.Fatalf("%q: got %s want %s", s, got.Bytes(), w)
		}
	})
}

// PlainPrefix stops at the first byte a JSON string writer must look at.
func FuzzPlainPrefix(f *testing.F) {
	for _, s := range []string{"", "abcdefgh", "abcdefghij\"k", "0123456789abcdef\x01", "é", "12345678\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(s)
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				want = i
				break
			}
		}
		if got := PlainPrefix(s); got != want {
			t.Fatalf("PlainPrefix(%q) = %d, want %d", s, got, want)
		}
		if got := PlainPrefix([]byte(s)); got != want {
			t.Fatalf("PlainPrefix([]byte %q) = %d, want %d", s, got, want)
		}
	})
}
