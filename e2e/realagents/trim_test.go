package realagents

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTrimLongStrings(t *testing.T) {
	long := strings.Repeat("é", 2000) // 4000 bytes
	cases := []struct{ in, want string }{
		{`{"b":1,"a":[true,null,"x",{"k":-1.5e3}],"c":{}}`, `{"b":1,"a":[true,null,"x",{"k":-1.5e3}],"c":{}}`},
		{`[]`, `[]`},
		{`{"s":"<&>\u2028"}`, `{"s":"<&>\u2028"}`}, // HTML unescaped; U+2028 stays escaped
		{`{"` + long + `":"` + long + `"}`, `{"` + long + `":"` + strings.Repeat("é", 100) + `… [3800 bytes trimmed]"}`},
	}
	for _, c := range cases {
		got, err := trimLongStrings([]byte(c.in), 2048)
		if err != nil {
			t.Fatalf("%.40s: %v", c.in, err)
		}
		if string(got) != c.want {
			t.Errorf("trimLongStrings(%.60s)\n got %.300s\nwant %.300s", c.in, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("not JSON: %.100s", got)
		}
	}
}
