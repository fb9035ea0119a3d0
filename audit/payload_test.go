package audit

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The permission payloads write themselves as JSON that decodes to what
// json.Marshal writes, and refuse a request that is not JSON as it does.
func TestPermissionPayloadsAsMarshal(t *testing.T) {
	raws := []json.RawMessage{nil, json.RawMessage(`{"id":"1","tool_call":{"title":"a <b> & \"c\""}}`),
		json.RawMessage("{ \"a\" :\n [1, 2.5e3, null, true],\t\"b\\\"\": \" \\n \" }"), json.RawMessage(`"x"`), json.RawMessage(`[]`)}
	texts := []string{"", "plain", "quote \" backslash \\ tab \t nl \n", "ünïcødé \u2028 \x7f \x01", "bad \xff utf-8", "<html> & co"}
	var values []any
	for i, s := range texts {
		raw := raws[i%len(raws)]
		values = append(values,
			PermissionRequest{RequestID: s, Tool: "execute", Title: texts[(i+1)%len(texts)], Options: []string{s, "allow-once(allow_once)"}, Request: raw, Unrequested: i%2 == 0},
			PermissionRequest{Title: s},
			PermissionRequest{},
			PermissionDecision{RequestID: s, Decision: "allow", Option: s, DecidedBy: "rule:" + s, Reason: texts[(i+2)%len(texts)], Via: s, Request: raw, Unrequested: i%2 == 1},
			PermissionDecision{},
		)
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.(appender).appendJSON(nil)
		if err != nil {
			t.Fatalf("%#v: %v", v, err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%#v wrote %s: %v", v, got, err)
		}
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%#v:\n got %s\nwant %s", v, got, want)
		}
	}
	for _, bad := range []json.RawMessage{json.RawMessage(`{"a":`), json.RawMessage(`{} {}`), json.RawMessage("\"a\nb\"")} {
		_, merr := json.Marshal(PermissionRequest{Request: bad})
		if _, err := (PermissionRequest{Request: bad}).appendJSON(nil); (err == nil) != (merr == nil) {
			t.Errorf("request %q: err %v, json.Marshal's %v", bad, err, merr)
		}
		if _, err := (PermissionDecision{Request: bad}).appendJSON(nil); (err == nil) != (merr == nil) {
			t.Errorf("decision's request %q: err %v, json.Marshal's %v", bad, err, merr)
		}
	}
}
