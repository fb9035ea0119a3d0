package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"
)

// parseEnvelope, the one-pass reader of every inbound line, agrees with
// json.Unmarshal into the envelope: the same lines are refused and the same
// members are taken.
func FuzzParseEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"a":[1,2.5e3,-0,true,false,null,"x\n\u00e9"]}}`,
		`{"jsonrpc":"2.0","id":7,"result":null}`, `{"id":"a","error":{"code":-1,"message":"m"}}`,
		`{"Method":"x","method":"y"}`, `{"method":5,"id":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":"\x"}`,
		`{"a":"` + "\x01" + `"}`, `{} x`, `{"params":[1,]}`, `{"\u0069d":3}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`,
		`{"a":tru}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"id":1,"id":2}`, `{ "method" : "m" , "params" : { } }`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			return
		}
		var want envelope
		werr := json.Unmarshal(line, &want)
		var got envelope
		gerr := parseEnvelope(line, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: json.Unmarshal err %v, parseEnvelope err %v", line, werr, gerr)
		}
		if werr != nil {
			return
		}
		if got.JSONRPC != want.JSONRPC || got.ID != want.ID || got.Method != want.Method ||
			!bytes.Equal(got.Params, want.Params) || !bytes.Equal(got.Result, want.Result) || !bytes.Equal(got.Error, want.Error) {
			t.Fatalf("%q:\n got %+v\nwant %+v", line, got, want)
		}
	})
}
