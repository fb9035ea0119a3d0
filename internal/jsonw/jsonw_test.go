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
