package driver

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// WriteJSON writes what encoding/json writes, byte for byte, for every
// member: each field is set in turn (by reflection, so that a field added
// to PermissionDecision and not to WriteJSON fails here), with text that
// needs escaping, and all of them at once.
func TestDecisionWriteJSONAsEncodingJSON(t *testing.T) {
	texts := []string{"plain", "a \"quoted\" \\ <b>&\n\t\x01 é \u2028 \xff"}
	var cases []PermissionDecision
	typ := reflect.TypeFor[PermissionDecision]()
	var all PermissionDecision
	for i := range typ.NumField() {
		for _, s := range texts {
			var d PermissionDecision
			for _, v := range []reflect.Value{reflect.ValueOf(&d).Elem().Field(i), reflect.ValueOf(&all).Elem().Field(i)} {
				switch v.Kind() {
				case reflect.String:
					v.SetString(s)
				case reflect.Bool:
					v.SetBool(true)
				default:
					t.Fatalf("field %s is a %s: WriteJSON does not write it", typ.Field(i).Name, v.Kind())
				}
			}
			cases = append(cases, d)
		}
	}
	cases = append(cases, all, PermissionDecision{})
	for _, d := range cases {
		var want, got strings.Builder
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&d); err != nil {
			t.Fatal(err)
		}
		d.WriteJSON(&got)
		if got.String()+"\n" != want.String() {
			t.Errorf("got  %s\nwant %s", got.String(), want.String())
		}
	}
}
