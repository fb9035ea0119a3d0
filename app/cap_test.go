package app

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/runner"
)

// These drift tests keep cap.md true: its examples must decode into the
// code's types, and everything the code emits must be documented.

func readCap(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../cap.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// blocks returns the fenced code blocks whose info string is "json <tag>".
func blocks(doc, tag string) []string {
	re := regexp.MustCompile("(?s)```json " + tag + "\n(.*?)\n```")
	var out []string
	for _, m := range re.FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

func strict(data string, v any) error {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func TestCapFrameExamples(t *testing.T) {
	doc := readCap(t)
	known := map[string]bool{}
	for _, ft := range BuildManifest().FrameTypes {
		known[ft] = true
	}
	seen := map[string]bool{}
	for _, b := range blocks(doc, "frame") {
		var ev driver.Event
		if err := strict(b, &ev); err != nil {
			t.Errorf("frame example does not decode into driver.Event: %v\n%s", err, b)
			continue
		}
		if !known[string(ev.Type)] {
			t.Errorf("cap.md documents frame type %q that the code does not emit", ev.Type)
		}
		if ev.Seq == 0 || ev.Time.IsZero() || ev.Session == "" {
			t.Errorf("frame %q lacks seq, ts or session", ev.Type)
		}
		// Exactly the payload field named in the table must be set.
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(b), &m)
		payloads := 0
		for k := range m {
			switch k {
			case "type", "seq", "ts", "session":
			default:
				payloads++
			}
		}
		if payloads != 1 {
			t.Errorf("frame %q has %d payload fields, want 1", ev.Type, payloads)
		}
		seen[string(ev.Type)] = true
	}
	res := blocks(doc, "result")
	if len(res) != 1 {
		t.Fatalf("want one result example, found %d", len(res))
	}
	var rf runner.ResultFrame
	if err := strict(res[0], &rf); err != nil {
		t.Fatalf("result example does not decode into runner.ResultFrame: %v", err)
	}
	if rf.Type != ResultFrameType {
		t.Fatalf("result frame type %q", rf.Type)
	}
	seen[ResultFrameType] = true
	for ft := range known {
		if !seen[ft] {
			t.Errorf("frame type %q is emitted by the code but has no example in cap.md", ft)
		}
		if !strings.Contains(doc, "| `"+ft+"` |") {
			t.Errorf("frame type %q is not in cap.md's frame table", ft)
		}
	}
}

// Every field of the result document is documented, and the documented
// example carries every field.
func TestCapResultFields(t *testing.T) {
	doc := readCap(t)
	m := map[string]bool{}
	rt := reflect.TypeOf(runner.Result{})
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = true
		}
	}
	for k := range m {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("result field %q is not documented in cap.md", k)
		}
	}
	var ex map[string]any
	_ = json.Unmarshal([]byte(blocks(doc, "result")[0]), &ex)
	for k := range m {
		if k == "turns" || k == "parked" || k == "resumed" {
			continue // tai chat's only, a parked run's, a relaunched one's; the example is a denied tai run's result
		}
		if _, ok := ex[k]; !ok {
			t.Errorf("result example lacks field %q", k)
		}
	}
}

func TestCapManifest(t *testing.T) {
	doc := readCap(t)
	ex := blocks(doc, "manifest")
	if len(ex) != 1 {
		t.Fatalf("want one manifest example, found %d", len(ex))
	}
	var mf Manifest
	if err := strict(ex[0], &mf); err != nil {
		t.Fatalf("manifest example does not decode: %v", err)
	}
	var exKeys, codeKeys map[string]json.RawMessage
	_ = json.Unmarshal([]byte(ex[0]), &exKeys)
	b, _ := json.Marshal(BuildManifest())
	_ = json.Unmarshal(b, &codeKeys)
	for k := range codeKeys {
		if _, ok := exKeys[k]; !ok {
			t.Errorf("manifest field %q missing from cap.md's example", k)
		}
		if !strings.Contains(doc, "| `"+k+"`") && !strings.Contains(doc, ", `"+k+"`") {
			t.Errorf("manifest field %q not described in cap.md", k)
		}
	}
	var out bytes.Buffer
	PrintManifest(&out)
	var printed Manifest
	if err := strict(out.String(), &printed); err != nil {
		t.Fatalf("--cap-manifest output does not decode: %v", err)
	}
}

func TestCapExitCodes(t *testing.T) {
	doc := readCap(t)
	re := regexp.MustCompile(`(?m)^\| (\d+) \| (\w+) \| (.+) \|$`)
	documented := map[int]string{}
	for _, m := range re.FindAllStringSubmatch(doc[strings.Index(doc, "## 5. Exit codes"):], -1) {
		n, _ := strconv.Atoi(m[1])
		documented[n] = m[2]
	}
	for _, c := range exitcode.All {
		if documented[int(c.Code)] != c.Name {
			t.Errorf("exit code %d (%s) documented as %q", c.Code, c.Name, documented[int(c.Code)])
		}
		delete(documented, int(c.Code))
	}
	var extra []int
	for n := range documented {
		extra = append(extra, n)
	}
	sort.Ints(extra)
	if len(extra) > 0 {
		t.Errorf("cap.md documents exit codes the code does not have: %v", extra)
	}
}

// The ACP client features of issue 15 are in the manifest and in cap.md.
func TestCapACPClientFeatures(t *testing.T) {
	doc := readCap(t)
	var acpFeatures []string
	for _, d := range BuildManifest().Drivers {
		if d.Name == "acp" {
			acpFeatures = d.Features
		}
	}
	for _, f := range []string{"elicitation/create", "elicitation/complete", "session/list", "session/delete", "session/fork", "additional_directories"} {
		if !slices.Contains(acpFeatures, f) {
			t.Errorf("the manifest's acp features lack %q", f)
		}
		if !strings.Contains(doc, "`"+f+"`") {
			t.Errorf("cap.md does not describe %q", f)
		}
	}
}

// The compare result's example decodes into CompareResult, carries
// every field, and each field is documented.
func TestCapCompareResult(t *testing.T) {
	doc := readCap(t)
	ex := blocks(doc, "compare")
	if len(ex) != 1 {
		t.Fatalf("want one compare example, found %d", len(ex))
	}
	var r CompareResult
	if err := strict(ex[0], &r); err != nil {
		t.Fatalf("compare example does not decode: %v", err)
	}
	sec := doc[strings.Index(doc, "## 10. The compare result"):]
	var top, cand map[string]json.RawMessage
	_ = json.Unmarshal([]byte(ex[0]), &top)
	var cands []map[string]json.RawMessage
	_ = json.Unmarshal(top["candidates"], &cands)
	cand = cands[0]
	for _, typ := range []struct {
		t  reflect.Type
		ex map[string]json.RawMessage
	}{{reflect.TypeOf(CompareResult{}), top}, {reflect.TypeOf(Candidate{}), cand}} {
		for i := 0; i < typ.t.NumField(); i++ {
			name, _, _ := strings.Cut(typ.t.Field(i).Tag.Get("json"), ",")
			if !strings.Contains(sec, "`"+name+"`") {
				t.Errorf("compare field %q is not documented in cap.md", name)
			}
			if _, ok := typ.ex[name]; !ok && name != "reason" {
				t.Errorf("compare example lacks %q", name)
			}
		}
	}
}

// The compare history's example decodes into CompareWin, carries every
// field, and each field is documented after it.
func TestCapCompareHistory(t *testing.T) {
	doc := readCap(t)
	ex := blocks(doc, "compare-history")
	if len(ex) != 1 {
		t.Fatalf("want one compare history example, found %d", len(ex))
	}
	var wins []CompareWin
	if err := strict(ex[0], &wins); err != nil || len(wins) != 1 {
		t.Fatalf("compare history example does not decode into one CompareWin: %v", err)
	}
	var got []map[string]json.RawMessage
	_ = json.Unmarshal([]byte(ex[0]), &got)
	sec := doc[strings.Index(doc, "```json compare-history"):]
	typ := reflect.TypeOf(CompareWin{})
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(sec, "`"+name+"`") {
			t.Errorf("compare history field %q is not documented in cap.md", name)
		}
		if _, ok := got[0][name]; !ok {
			t.Errorf("compare history example lacks %q", name)
		}
	}
}
