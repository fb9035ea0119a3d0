package acp

import (
	"encoding/json"
	"reflect"
	"testing"
)

var permissionSeeds = []string{
	`{"sessionId":"s","toolCall":{"toolCallId":"t","title":"Flood permission t","kind":"other","status":"pending"},"options":[{"optionId":"allow-once","name":"Allow","kind":"allow_once"},{"optionId":"reject-once","name":"Reject","kind":"reject_once"}]}`,
	`{"options":[],"toolCall":{"toolCallId":"t"},"sessionId":"s"}`,
	` { "sessionId" : "s" , "toolCall" : { "toolCallId" : "t" , "rawInput" : { "command" : "rm -rf /" , "a" : [ 1 , "}" ] } } , "options" : [ { "optionId" : "o" , "name" : "N" , "kind" : "_custom" } ] } `,
	`{"sessionId":"s","toolCall":{"toolCallId":"t","title":null},"options":[]}`,
	`{"sessionId":"s","toolCall":{"toolCallId":"t","content":[{"type":"diff","path":"/a","newText":"x"}],"locations":[{"path":"/a"}]},"options":[]}`,
	`{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":null}`,
	`{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[null,{"optionId":"o"}]}`,
	`{"sessionId":"s","toolCall":{"title":"a"},"toolCall":{"toolCallId":"t"},"options":[]}`,
	`{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[{"optionId":"a","name":"A","kind":"allow_once"},{"optionId":"b"}],"options":[{"name":"X"}]}`,
	`{"SessionId":"s","toolCall":{"ToolCallId":"t"},"options":[{"OptionId":"o","KIND":"allow_once"}]}`,
	`{"sessionId":"s\u00e9\n","toolCall":{"toolCallId":"t","title":"\xff<&>","name":"n","rawOutput":[1,{"b":null}],"rawInput":null},"options":[]}`,
	`{"sessionId":"s","toolCall":{"toolCallId":"t","sessionUpdate":"tool_call","_meta":{"a":1}},"options":[],"_meta":{"x":true}}`,
	`{"sessionId":"s","toolCall":"t","options":[]}`, `{"sessionId":5}`, `null`, `[]`, `{}`,
	`{"sessionId":"s","toolCall":{"toolCallId":"t","kind":"edit","status":"in_progress","kind":"read"},"options":[{"optionId":"o","optionId":"p"}]}`,
}

// DecodeRequestPermission gives what json.Unmarshal gives, error or not,
// on the seeds and whatever the fuzzer makes of them.
func FuzzDecodeRequestPermission(f *testing.F) {
	for _, s := range permissionSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var want, got RequestPermissionRequest
		werr := json.Unmarshal(data, &want)
		gerr := DecodeRequestPermission(data, &got)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: err %v, json.Unmarshal's %v", data, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", data, got, want)
		}
	})
}

// The common request is read without encoding/json; the unusual ones are
// still decoded, by it.
func TestDecodeRequestPermissionFastPath(t *testing.T) {
	for i, s := range permissionSeeds {
		var r RequestPermissionRequest
		fast := fastPermission([]byte(s), &r)
		if want := i < 3 || i >= 16; fast != want { // the last two: an empty request, repeated plain members
			t.Errorf("seed %d: fast path %v, want %v: %s", i, fast, want, s)
		}
	}
}

func BenchmarkDecodeRequestPermission(b *testing.B) {
	data := []byte(permissionSeeds[0])
	for _, c := range []struct {
		name string
		dec  func([]byte, *RequestPermissionRequest) error
	}{
		{"fast", DecodeRequestPermission},
		{"encoding-json", func(d []byte, r *RequestPermissionRequest) error { return json.Unmarshal(d, r) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r RequestPermissionRequest
				if err := c.dec(data, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
