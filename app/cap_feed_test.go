package app

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/fleet"
)

// cap.md §7 drift tests: the fleet's and the feed's frames and /state.

func frameType(t *testing.T, b string) string {
	t.Helper()
	var f struct{ Type string }
	if err := json.Unmarshal([]byte(b), &f); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return f.Type
}

func TestCapFleetFrames(t *testing.T) {
	doc := readCap(t)
	known := map[string]bool{}
	for _, ft := range BuildManifest().FrameTypes {
		known[ft] = true
	}
	seen := map[string]bool{}
	for _, b := range blocks(doc, "fleet-frame") {
		typ := frameType(t, b)
		seen[typ] = true
		switch typ {
		case FleetEventFrameType:
			var f FleetEventFrame
			if err := strict(b, &f); err != nil || f.Run == "" || f.Seq == 0 || f.Event == "" {
				t.Errorf("fleet.event example: %v\n%s", err, b)
			}
		case FleetResultFrameType:
			var f FleetResultFrame
			if err := strict(b, &f); err != nil || f.Run == "" || f.Seq == 0 || len(f.Tasks) == 0 {
				t.Errorf("fleet.result example: %v\n%s", err, b)
			}
		default:
			var f TaskFrame
			if err := strict(b, &f); err != nil || f.Run == "" || f.Task == "" || f.Session == "" {
				t.Errorf("task frame example: %v\n%s", err, b)
			}
			if !known[typ] {
				t.Errorf("task frame of unknown type %q", typ)
			}
		}
	}
	for _, ft := range []string{FleetEventFrameType, FleetResultFrameType} {
		if !seen[ft] {
			t.Errorf("fleet frame type %q has no example in cap.md", ft)
		}
		if !strings.Contains(doc, "| `"+ft+"` |") {
			t.Errorf("fleet frame type %q is not in cap.md's table", ft)
		}
	}
	// What the code writes decodes the same way.
	var out strings.Builder
	s := newFleetStream(&out, "r", fixedNow)
	s.result(Summary{Run: "r", Status: "done", Counts: map[fleet.TaskStatus]int{}})
	var rf FleetResultFrame
	if err := strict(out.String(), &rf); err != nil || rf.Type != FleetResultFrameType || rf.Seq != 1 {
		t.Fatalf("written result frame %s: %v", out.String(), err)
	}
}

func TestCapFeedFrames(t *testing.T) {
	doc := readCap(t)
	seen := map[string]bool{}
	for _, b := range blocks(doc, "feed-frame") {
		typ := frameType(t, b)
		seen[typ] = true
		switch typ {
		case feed.FrameAskOpened:
			var f feed.AskFrame
			if err := strict(b, &f); err != nil || f.Ask.ID == "" || f.Run == "" {
				t.Errorf("ask.opened example: %v\n%s", err, b)
			}
		case feed.FrameAskClosed:
			var f feed.AskClosed
			if err := strict(b, &f); err != nil || f.ID == "" || f.Run == "" {
				t.Errorf("ask.closed example: %v\n%s", err, b)
			}
		case feed.FrameQuestionOpened:
			var f feed.QuestionFrame
			if err := strict(b, &f); err != nil || f.Question.ID == "" || f.Question.Text == "" {
				t.Errorf("question.opened example: %v\n%s", err, b)
			}
		case feed.FrameQuestionClosed:
			var f feed.QuestionClosed
			if err := strict(b, &f); err != nil || f.ID == "" {
				t.Errorf("question.closed example: %v\n%s", err, b)
			}
		case feed.FrameElicitOpened:
			var f feed.ElicitFrame
			if err := strict(b, &f); err != nil || f.Elicitation.ID == "" || f.Elicitation.Request.Mode == "" {
				t.Errorf("elicit.opened example: %v\n%s", err, b)
			}
		case feed.FrameElicitClosed:
			var f feed.ElicitClosed
			if err := strict(b, &f); err != nil || f.ID == "" || f.Action == "" {
				t.Errorf("elicit.closed example: %v\n%s", err, b)
			}
		default:
			t.Errorf("cap.md documents feed frame %q that the code does not send", typ)
		}
	}
	for _, ft := range []string{feed.FrameAskOpened, feed.FrameAskClosed, feed.FrameQuestionOpened, feed.FrameQuestionClosed, feed.FrameElicitOpened, feed.FrameElicitClosed} {
		if !seen[ft] || !strings.Contains(doc, "| `"+ft+"` |") {
			t.Errorf("feed frame %q lacks its example or table row", ft)
		}
	}
	st := blocks(doc, "feed-state")
	if len(st) != 1 {
		t.Fatalf("want one feed-state example, found %d", len(st))
	}
	var s feed.State
	if err := strict(st[0], &s); err != nil {
		t.Fatalf("feed-state example: %v", err)
	}
	// Every field of the state, its sessions and tasks is in the example
	// and described.
	var ex map[string]json.RawMessage
	_ = json.Unmarshal([]byte(st[0]), &ex)
	var sess, task, els []map[string]json.RawMessage
	var budget, limit map[string]json.RawMessage
	_ = json.Unmarshal(ex["sessions"], &sess)
	_ = json.Unmarshal(ex["tasks"], &task)
	_ = json.Unmarshal(ex["elicitations"], &els)
	_ = json.Unmarshal(ex["budget"], &budget)
	_ = json.Unmarshal(budget["limit"], &limit)
	var taskBudget map[string]json.RawMessage
	_ = json.Unmarshal(task[0]["budget"], &taskBudget)
	budget["over"] = taskBudget["over"] // the example's fleet is within its budget, its task is not
	if len(sess) == 0 || len(task) == 0 || len(els) == 0 {
		t.Fatal("the feed-state example lacks a session, a task or an elicitation")
	}
	for _, c := range []struct {
		typ reflect.Type
		ex  map[string]json.RawMessage
	}{{reflect.TypeOf(feed.State{}), ex}, {reflect.TypeOf(feed.Session{}), sess[0]}, {reflect.TypeOf(feed.Task{}), task[0]},
		{reflect.TypeOf(feed.Elicitation{}), els[0]}, {reflect.TypeOf(feed.Budget{}), budget}, {reflect.TypeOf(feed.Limits{}), limit}} {
		for i := 0; i < c.typ.NumField(); i++ {
			name, _, _ := strings.Cut(c.typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if _, ok := c.ex[name]; !ok {
				t.Errorf("%s field %q is missing from cap.md's feed-state example", c.typ.Name(), name)
			}
			if !strings.Contains(doc, "`"+name+"`") {
				t.Errorf("%s field %q is not described in cap.md", c.typ.Name(), name)
			}
		}
	}
}

func fixedNow() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }
