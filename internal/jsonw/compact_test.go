package jsonw

import "testing"

func TestCompact(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{"a":[1,"x y",{"b":null}]}`, true}, {`"a \" b"`, true}, {`"\\"`, true}, {`[]`, true},
		{`{"a": 1}`, false}, {"[1,\n2]", false}, {` 1`, false}, {`{"a":`, false}, {`{} {}`, false}, {"\"a\nb\"", false}, {``, false},
	} {
		if got := Compact([]byte(tc.raw)); got != tc.want {
			t.Errorf("Compact(%q) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}
