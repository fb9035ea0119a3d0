package acp

import (
	"bytes"
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

// A permission answer that writes itself writes what Marshal writes; one
// with _meta or an unknown outcome declines, writing nothing.
func TestPermissionWriteResult(t *testing.T) {
	meta := map[string]any{"tai": map[string]any{"decidedBy": "policy"}}
	for _, tc := range []struct {
		name  string
		r     RequestPermissionResponse
		wrote bool
	}{
		{"selected", SelectPermission("allow-once"), true},
		{"escaped id", SelectPermission("a\"b\\c\n\t<&>\u2028\x01é"), true},
		{"invalid utf-8 id", SelectPermission("a\xffb"), true},
		{"empty id", SelectPermission(""), true},
		{"cancelled", CancelPermission(), true},
		{"response meta", RequestPermissionResponse{Outcome: SelectPermission("x").Outcome, Meta: meta}, false},
		{"selected meta", RequestPermissionResponse{Outcome: RequestPermissionOutcome{Selected: &SelectedPermissionOutcome{OptionId: "x", Meta: meta}}}, false},
		{"cancelled meta", RequestPermissionResponse{Outcome: RequestPermissionOutcome{Cancelled: &CancelledPermissionOutcome{Meta: meta}}}, false},
		{"unknown", RequestPermissionResponse{Outcome: RequestPermissionOutcome{Unknown: newUnknown("later", []byte(`{"outcome":"later"}`))}}, false},
		{"none", RequestPermissionResponse{}, false},
		{"two", RequestPermissionResponse{Outcome: RequestPermissionOutcome{Selected: &SelectedPermissionOutcome{}, Cancelled: &CancelledPermissionOutcome{}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if got := tc.r.WriteResult(&buf); got != tc.wrote {
				t.Fatalf("WriteResult = %v, want %v", got, tc.wrote)
			}
			if !tc.wrote {
				if buf.Len() != 0 {
					t.Fatalf("declined, but wrote %q", buf.Bytes())
				}
				return
			}
			want, err := Marshal(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != string(want) {
				t.Fatalf("wrote\n%s\nMarshal writes\n%s", buf.Bytes(), want)
			}
		})
	}
}

func FuzzPermissionWriteResult(f *testing.F) {
	for _, s := range []string{"allow", "a\"\\\n<>&\u2028", "\xff\xfe", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		var buf bytes.Buffer
		r := SelectPermission(id)
		if !r.WriteResult(&buf) {
			t.Fatal("declined a plain selection")
		}
		want, err := Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if buf.String() != string(want) {
			t.Fatalf("wrote %q, Marshal writes %q", buf.Bytes(), want)
		}
	})
}
