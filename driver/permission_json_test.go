package driver

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// samples are values of each kind a field of these types can have: text
// that needs escaping, raw JSON that needs compacting.
var (
	sampleTexts = []string{"plain", "a \"quoted\" \\ <b>&\n\t\x01 é \u2028 \xff"}
	sampleRaws  = []json.RawMessage{json.RawMessage(`{"a": [1, "x y", {"<b>":null}] }`), json.RawMessage(`"s"`), json.RawMessage(`[]`), json.RawMessage(`null`)}
)

// variants returns values of typ: the zero value, each field set in turn
// to each of its samples, and every field set at once. It fails on a kind
// of field it does not know, so that a field added to these types, and
// not to their WriteJSON, fails the test that uses it.
func variants(t *testing.T, typ reflect.Type) []reflect.Value {
	t.Helper()
	rawType := reflect.TypeFor[json.RawMessage]()
	samples := func(ft reflect.Type) []reflect.Value {
		var out []reflect.Value
		switch {
		case ft == rawType:
			for _, r := range sampleRaws {
				out = append(out, reflect.ValueOf(r))
			}
		case ft.Kind() == reflect.String:
			for _, s := range sampleTexts {
				out = append(out, reflect.ValueOf(s).Convert(ft))
			}
		case ft.Kind() == reflect.Bool:
			out = append(out, reflect.ValueOf(true))
		case ft.Kind() == reflect.Int:
			out = append(out, reflect.ValueOf(7), reflect.ValueOf(-3))
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.String:
			for _, s := range append([]string{""}, sampleTexts...) {
				p := reflect.New(ft.Elem())
				p.Elem().SetString(s)
				out = append(out, p)
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, reflect.MakeSlice(ft, 0, 0))
			all := reflect.MakeSlice(ft, 0, 0)
			for _, e := range variants(t, ft.Elem()) {
				out = append(out, reflect.Append(reflect.MakeSlice(ft, 0, 1), e))
				all = reflect.Append(all, e)
			}
			out = append(out, all)
		case ft.Kind() == reflect.Struct:
			out = variants(t, ft)
		default:
			t.Fatalf("%s: a field of kind %s has no samples (and likely no WriteJSON)", typ, ft)
		}
		return out
	}
	out := []reflect.Value{reflect.New(typ).Elem()}
	all := reflect.New(typ).Elem()
	for i := range typ.NumField() {
		ss := samples(typ.Field(i).Type)
		for _, s := range ss {
			v := reflect.New(typ).Elem()
			v.Field(i).Set(s)
			out = append(out, v)
		}
		all.Field(i).Set(ss[len(ss)-1])
	}
	return append(out, all)
}

// WriteJSON writes what encoding/json writes with SetEscapeHTML(false),
// byte for byte, for every member of each type.
func TestWriteJSONAsEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		typ   reflect.Type
		write func(v reflect.Value, w *strings.Builder) error
	}{
		{reflect.TypeFor[PermissionDecision](), func(v reflect.Value, w *strings.Builder) error {
			v.Addr().Interface().(*PermissionDecision).WriteJSON(w)
			return nil
		}},
		{reflect.TypeFor[PermissionRequest](), func(v reflect.Value, w *strings.Builder) error {
			return v.Addr().Interface().(*PermissionRequest).WriteJSON(w)
		}},
		{reflect.TypeFor[ToolCall](), func(v reflect.Value, w *strings.Builder) error {
			return v.Addr().Interface().(*ToolCall).WriteJSON(w)
		}},
	} {
		vs := variants(t, tc.typ)
		for _, v := range vs {
			var want, got strings.Builder
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v.Addr().Interface()); err != nil {
				t.Fatal(err)
			}
			if err := tc.write(v, &got); err != nil {
				t.Fatalf("%s: %v", tc.typ, err)
			}
			if got.String()+"\n" != want.String() {
				t.Errorf("%s:\n got %s\nwant %s", tc.typ, got.String(), want.String())
			}
		}
		t.Logf("%s: %d values", tc.typ, len(vs))
	}
}

// A raw value that is not JSON fails WriteJSON as it fails encoding/json.
func TestWriteJSONRefusesWhatIsNotJSON(t *testing.T) {
	for _, bad := range []json.RawMessage{json.RawMessage(`{"a":`), json.RawMessage(`{} {}`), json.RawMessage("\"a\nb\"")} {
		for _, tc := range []ToolCall{{RawInput: bad}, {RawOutput: bad}, {Content: []ToolContent{{Type: "x", Raw: bad}}}} {
			_, werr := json.Marshal(tc)
			var b strings.Builder
			err := tc.WriteJSON(&b)
			if (err == nil) != (werr == nil) {
				t.Errorf("%q: err %v, encoding/json's %v", bad, err, werr)
			}
			if err := (&PermissionRequest{ToolCall: tc}).WriteJSON(&b); (err == nil) != (werr == nil) {
				t.Errorf("request with %q: err %v, encoding/json's %v", bad, err, werr)
			}
		}
	}
}
