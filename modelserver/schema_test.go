package modelserver

import "testing"

func TestSynthesize(t *testing.T) {
	cases := []struct {
		name, schema, want string
	}{
		{"nil schema", ``, `{}`},
		{"string", `{"type":"string"}`, `"ok"`},
		{"enum first", `{"type":"string","enum":["b","a"]}`, `"b"`},
		{"const", `{"const":7}`, `7`},
		{"number and integer", `{"type":"object","properties":{"n":{"type":"number"},"i":{"type":"integer","minimum":2}}}`, `{"n":0,"i":2}`},
		{"exclusive minimum", `{"type":"integer","exclusiveMinimum":0}`, `1`},
		{"boolean", `{"type":"boolean"}`, `false`},
		{"nullable type list", `{"type":["null","string"]}`, `"ok"`},
		{"array one item", `{"type":"array","items":{"type":"integer"}}`, `[0]`},
		{"array minItems", `{"type":"array","items":{"type":"string"},"minItems":2}`, `["ok","ok"]`},
		{"array without items", `{"type":"array"}`, `["ok"]`},
		{"string formats and minLength", `{"type":"object","properties":{"d":{"type":"string","format":"date-time"},"s":{"type":"string","minLength":5}}}`, `{"d":"1970-01-01T00:00:00Z","s":"okkkk"}`},
		{"object keeps property order", `{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"boolean"}}}`, `{"z":"ok","a":false}`},
		{"nested object", `{"properties":{"o":{"type":"object","properties":{"x":{"type":"null"}}}}}`, `{"o":{"x":null}}`},
		{"gemini upper case", `{"type":"OBJECT","properties":{"a":{"type":"ARRAY","items":{"type":"NUMBER"}}}}`, `{"a":[0]}`},
		{"propertyOrdering", `{"type":"OBJECT","properties":{"a":{"type":"STRING"},"b":{"type":"STRING"}},"propertyOrdering":["b","a"]}`, `{"b":"ok","a":"ok"}`},
		{"anyOf skips null", `{"anyOf":[{"type":"null"},{"type":"integer"}]}`, `0`},
		{"allOf merges", `{"allOf":[{"properties":{"a":{"type":"string"}}},{"properties":{"b":{"type":"boolean"}}}]}`, `{"a":"ok","b":false}`},
		{"$ref to $defs", `{"type":"object","properties":{"item":{"$ref":"#/$defs/Item"}},"$defs":{"Item":{"type":"object","properties":{"id":{"type":"integer"}}}}}`, `{"item":{"id":0}}`},
		{"recursive $ref terminates", `{"$defs":{"N":{"type":"object","properties":{"next":{"$ref":"#/$defs/N"}}}},"$ref":"#/$defs/N"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var schema any
			if c.schema != "" {
				var err error
				if schema, err = decodeJSON([]byte(c.schema)); err != nil {
					t.Fatal(err)
				}
			}
			got := string(mustMarshal(synthesize(schema)))
			if c.want != "" && got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}
