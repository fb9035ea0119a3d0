package a2a

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tai-dev/tai/driver"
)

// Frames as the design notes saw them live (a2a-go v2.3.1's 1.0 echo peer
// and its 0.3 layer), with concrete ids; the draft ones follow the draft
// spec's schema (no peer speaks it any more).
func TestDecodeEvent(t *testing.T) {
	type want struct {
		kind, taskID, ctxID string
		state               State
		final               bool
		text                string // status/message/artifact text
		artifact            string
		appendTo, last      bool
		rawParts            int
	}
	tests := []struct {
		name string
		json string
		want want
	}{
		// 1.0
		{"1.0 task", `{"task":{"id":"t1","contextId":"c1","history":[{"messageId":"m2","parts":[{"text":"stream me"}],"role":"ROLE_USER"}],"status":{"state":"TASK_STATE_SUBMITTED"}}}`,
			want{kind: KindTask, taskID: "t1", ctxID: "c1", state: StateSubmitted}},
		{"1.0 working", `{"statusUpdate":{"contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-11-30T10:00:00Z"},"taskId":"t1"}}`,
			want{kind: KindStatus, taskID: "t1", ctxID: "c1", state: StateWorking}},
		{"1.0 artifact", `{"artifactUpdate":{"artifact":{"artifactId":"a1","parts":[{"text":"stream me"}]},"contextId":"c1","lastChunk":true,"taskId":"t1"}}`,
			want{kind: KindArtifact, taskID: "t1", ctxID: "c1", artifact: "a1", text: "stream me", last: true}},
		{"1.0 append with a file part", `{"artifactUpdate":{"artifact":{"artifactId":"a1","parts":[{"text":"x"},{"raw":"aGk=","filename":"x.bin","mediaType":"application/octet-stream"}]},"append":true,"contextId":"c1","taskId":"t1"}}`,
			want{kind: KindArtifact, taskID: "t1", ctxID: "c1", artifact: "a1", text: "x", appendTo: true, rawParts: 1}},
		{"1.0 completed", `{"statusUpdate":{"contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"},"taskId":"t1"}}`,
			want{kind: KindStatus, taskID: "t1", ctxID: "c1", state: StateCompleted}},
		{"1.0 input required", `{"statusUpdate":{"contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"q","role":"ROLE_AGENT","parts":[{"text":"approve? yes/no"}],"taskId":"t1","contextId":"c1"}},"taskId":"t1"}}`,
			want{kind: KindStatus, taskID: "t1", ctxID: "c1", state: StateInputRequired, text: "approve? yes/no"}},
		{"1.0 message", `{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}],"contextId":"c1"}}`,
			want{kind: KindMessage, ctxID: "c1", text: "hi"}},
		{"1.0 bare task (CancelTask)", `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_CANCELED"}}`,
			want{kind: KindTask, taskID: "t1", ctxID: "c1", state: StateCanceled}},
		{"1.0 unspecified state", `{"statusUpdate":{"contextId":"c1","status":{"state":"TASK_STATE_UNSPECIFIED"},"taskId":"t1"}}`,
			want{kind: KindStatus, taskID: "t1", ctxID: "c1", state: StateUnknown}},
		{"1.0 unknown wrapper", `{"pushNotification":{"id":"p"}}`, want{kind: KindUnknown}},
		// 0.3
		{"0.3 task", `{"kind":"task","id":"t4","contextId":"c4","history":[{"kind":"message","messageId":"m4","parts":[{"kind":"text","text":"old stream"}],"role":"user"}],"status":{"state":"submitted"}}`,
			want{kind: KindTask, taskID: "t4", ctxID: "c4", state: StateSubmitted}},
		{"0.3 final", `{"kind":"status-update","contextId":"c4","final":true,"status":{"state":"completed","timestamp":"2026-11-30T10:00:00Z"},"taskId":"t4"}`,
			want{kind: KindStatus, taskID: "t4", ctxID: "c4", state: StateCompleted, final: true}},
		{"0.3 artifact chunk", `{"kind":"artifact-update","taskId":"t4","contextId":"c4","artifact":{"artifactId":"a4","parts":[{"kind":"text","text":"two "},{"kind":"data","data":{"n":2}}]},"append":true,"lastChunk":false}`,
			want{kind: KindArtifact, taskID: "t4", ctxID: "c4", artifact: "a4", text: "two ", appendTo: true, rawParts: 1}},
		{"0.3 input required, final", `{"kind":"status-update","taskId":"t4","contextId":"c4","final":true,"status":{"state":"input-required","message":{"kind":"message","messageId":"q","role":"agent","parts":[{"kind":"text","text":"name?"}]}}}`,
			want{kind: KindStatus, taskID: "t4", ctxID: "c4", state: StateInputRequired, final: true, text: "name?"}},
		{"0.3 message", `{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"hi"}],"contextId":"c4"}`,
			want{kind: KindMessage, ctxID: "c4", text: "hi"}},
		{"0.3 unknown kind", `{"kind":"push-config","id":"x"}`, want{kind: KindUnknown}},
		{"0.3 future state", `{"kind":"status-update","taskId":"t4","contextId":"c4","status":{"state":"paused"}}`,
			want{kind: KindStatus, taskID: "t4", ctxID: "c4", state: "paused"}},
		// draft
		{"draft status", `{"id":"t9","sessionId":"s9","status":{"state":"working"},"final":false}`,
			want{kind: KindStatus, taskID: "t9", ctxID: "s9", state: StateWorking}},
		{"draft artifact", `{"id":"t9","artifact":{"name":"answer","parts":[{"type":"text","text":"hi"}],"index":0,"append":true,"lastChunk":true}}`,
			want{kind: KindArtifact, taskID: "t9", artifact: "index-0", text: "hi", appendTo: true, last: true}},
		{"draft task", `{"id":"t9","sessionId":"s9","status":{"state":"completed","message":{"role":"agent","parts":[{"type":"text","text":"ok"}]}},"artifacts":[{"name":"a","parts":[{"type":"text","text":"x"}],"index":0}]}`,
			want{kind: KindTask, taskID: "t9", ctxID: "s9", state: StateCompleted, text: "ok"}},
		{"draft input required", `{"id":"t9","status":{"state":"input-required","message":{"role":"agent","parts":[{"type":"text","text":"y/n?"}]}},"final":true}`,
			want{kind: KindStatus, taskID: "t9", state: StateInputRequired, final: true, text: "y/n?"}},
		// tolerated oddities
		{"empty object", `{}`, want{kind: KindUnknown}},
		{"task with a bad status", `{"kind":"task","id":"t","status":7}`, want{kind: KindUnknown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := DecodeEvent(json.RawMessage(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if string(ev.Raw) != tt.json {
				t.Errorf("raw not kept: %s", ev.Raw)
			}
			w := tt.want
			got := want{kind: ev.Kind, taskID: ev.TaskID, ctxID: ev.ContextID, state: ev.Status.State, final: ev.Final,
				artifact: ev.Artifact.ID, appendTo: ev.Append, last: ev.LastChunk}
			switch ev.Kind {
			case KindTask:
				got.taskID, got.ctxID, got.state = ev.Task.ID, ev.Task.ContextID, ev.Task.Status.State
				if m := ev.Task.Status.Message; m != nil {
					got.text = partsText(m.Parts)
				}
			case KindMessage:
				got.ctxID, got.text = ev.Message.ContextID, partsText(ev.Message.Parts)
				if ev.Message.Role != roleAgent {
					t.Errorf("role %q", ev.Message.Role)
				}
			case KindStatus:
				if m := ev.Status.Message; m != nil {
					got.text = partsText(m.Parts)
				}
			case KindArtifact:
				got.text = partsText(ev.Artifact.Parts)
				for _, p := range ev.Artifact.Parts {
					if !p.IsText {
						got.rawParts++
					}
				}
			}
			if got != w {
				t.Errorf("got  %+v\nwant %+v", got, w)
			}
		})
	}
}

func TestDecodeEventRefuses(t *testing.T) {
	for _, in := range []string{``, `null`, `[]`, `"task"`, `{"task":`} {
		if _, err := DecodeEvent(json.RawMessage(in)); err == nil {
			t.Errorf("%q decoded", in)
		}
	}
}

func TestNormState(t *testing.T) {
	tests := map[string]State{
		"TASK_STATE_INPUT_REQUIRED": StateInputRequired, "input-required": StateInputRequired,
		"TASK_STATE_AUTH_REQUIRED": StateAuthRequired, "TASK_STATE_CANCELED": StateCanceled, "cancelled": StateCanceled,
		"TASK_STATE_UNSPECIFIED": StateUnknown, "": StateUnknown, "unknown": StateUnknown, "Working": StateWorking,
		"TASK_STATE_REJECTED": StateRejected,
	}
	for in, want := range tests {
		if got := normState(in); got != want {
			t.Errorf("normState(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSendParams(t *testing.T) {
	content := []driver.Content{driver.TextContent("hi"),
		{Type: "resource", URI: "file:///w/a.txt", Text: "A"},
		{Type: "resource_link", URI: "file:///w/b.png", Name: "b.png", MimeType: "image/png"}}
	first := outMessage{ID: "m1", Content: content, DraftTaskID: "dt", DraftSessionID: "ds"}
	follow := outMessage{ID: "m2", ContextID: "c", TaskID: "t", Content: content[:1], DraftTaskID: "dt2", DraftSessionID: "ds"}
	file := `\u003cfile path=\"/w/a.txt\"\u003e\nA\n\u003c/file\u003e` // as encoding/json spells it
	tests := []struct {
		name     string
		d        *dialect
		m        outMessage
		tenant   string
		blocking bool
		want     string
	}{
		{"1.0 first", d10, first, "acme", false,
			`{"message":{"messageId":"m1","parts":[{"text":"hi"},{"text":"` + file + `"},{"filename":"b.png","mediaType":"image/png","url":"file:///w/b.png"}],"role":"ROLE_USER"},"tenant":"acme"}`},
		{"1.0 follow-up", d10, follow, "", true,
			`{"message":{"contextId":"c","messageId":"m2","parts":[{"text":"hi"}],"role":"ROLE_USER","taskId":"t"}}`},
		{"0.3 first blocking", d03, first, "acme", true,
			`{"configuration":{"blocking":true},"message":{"kind":"message","messageId":"m1","parts":[{"kind":"text","text":"hi"},{"kind":"text","text":"` + file + `"},{"file":{"mimeType":"image/png","name":"b.png","uri":"file:///w/b.png"},"kind":"file"}],"role":"user"}}`},
		{"0.3 follow-up streaming", d03, follow, "", false,
			`{"message":{"contextId":"c","kind":"message","messageId":"m2","parts":[{"kind":"text","text":"hi"}],"role":"user","taskId":"t"}}`},
		{"draft first", dDraft, first, "", true,
			`{"id":"dt","message":{"parts":[{"text":"hi","type":"text"},{"text":"` + file + `","type":"text"},{"file":{"mimeType":"image/png","name":"b.png","uri":"file:///w/b.png"},"type":"file"}],"role":"user"},"sessionId":"ds"}`},
		{"draft answer continues the task", dDraft, follow, "", true,
			`{"id":"t","message":{"parts":[{"text":"hi","type":"text"}],"role":"user"},"sessionId":"c"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.d.sendParams(tt.m, tt.tenant, tt.blocking))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
	if got, _ := json.Marshal(d10.taskParams("t", "acme")); string(got) != `{"id":"t","tenant":"acme"}` {
		t.Errorf("1.0 task params %s", got)
	}
	if got, _ := json.Marshal(d03.taskParams("t", "acme")); string(got) != `{"id":"t"}` {
		t.Errorf("0.3 task params %s", got)
	}
	if err := checkContent([]driver.Content{{Type: "image"}}); !errors.Is(err, driver.ErrUnsupported) {
		t.Errorf("image content: %v", err)
	}
}

func TestCardEndpoints(t *testing.T) {
	type ep struct{ dialect, url, tenant string }
	tests := []struct {
		name  string
		card  string
		shape string
		want  []ep
	}{
		{"union (a2a-go compat card)", `{"name":"peer","supportedInterfaces":[{"url":"http://h/v1","protocolBinding":"JSONRPC","protocolVersion":"1.0"},{"url":"http://h/v03","protocolBinding":"JSONRPC","protocolVersion":"0.3"}],"url":"http://h/v03","protocolVersion":"0.3","preferredTransport":"JSONRPC","capabilities":{"streaming":true}}`,
			Dialect10, []ep{{"1.0", "http://h/v1", ""}, {"0.3", "http://h/v03", ""}, {"draft", "http://h/v03", ""}}},
		{"1.0 prefers gRPC, has a tenant", `{"name":"x","supportedInterfaces":[{"url":"grpc://h","protocolBinding":"GRPC","protocolVersion":"1.0"},{"url":"http://h/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0.1","tenant":"acme"}]}`,
			Dialect10, []ep{{"1.0", "http://h/rpc", "acme"}, {"0.3", "http://h/rpc", ""}, {"draft", "http://h/rpc", ""}}},
		{"0.3 JSON-RPC", `{"name":"x","protocolVersion":"0.3.0","url":"http://h/a2a","preferredTransport":"JSONRPC"}`,
			Dialect03, []ep{{"0.3", "http://h/a2a", ""}, {"draft", "http://h/a2a", ""}}},
		{"0.3 prefers REST, JSON-RPC additional", `{"name":"x","protocolVersion":"0.3.0","url":"http://h/rest","preferredTransport":"HTTP+JSON","additionalInterfaces":[{"url":"http://h/rest","transport":"HTTP+JSON"},{"url":"http://h/rpc","transport":"JSONRPC"}]}`,
			Dialect03, []ep{{"0.3", "http://h/rpc", ""}, {"draft", "http://h/rpc", ""}}},
		{"0.2 (no preferredTransport)", `{"name":"x","protocolVersion":"0.2.5","url":"http://h/"}`,
			Dialect03, []ep{{"0.3", "http://h/", ""}, {"draft", "http://h/", ""}}},
		{"draft", `{"name":"x","url":"http://h/api","capabilities":{"streaming":false}}`,
			DialectDraft, []ep{{"draft", "http://h/api", ""}, {"0.3", "http://h/api", ""}}},
		{"relative URL", `{"name":"x","supportedInterfaces":[{"url":"/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`,
			Dialect10, []ep{{"1.0", "http://card.host/rpc", ""}, {"0.3", "http://card.host/rpc", ""}, {"draft", "http://card.host/rpc", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseCard([]byte(tt.card))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Classify(); got != tt.shape {
				t.Errorf("shape %s, want %s", got, tt.shape)
			}
			eps, err := c.endpoints("http://card.host" + CardPath)
			if err != nil {
				t.Fatal(err)
			}
			var got []ep
			for _, e := range eps {
				got = append(got, ep{e.d.name, e.url, e.tenant})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
			}
		})
	}
	for _, bad := range []string{
		`{"name":"grpc only","supportedInterfaces":[{"url":"grpc://h","protocolBinding":"GRPC","protocolVersion":"1.0"}]}`,
		`{"name":"no url"}`,
	} {
		c, _ := parseCard([]byte(bad))
		if _, err := c.endpoints("http://h"); !errors.Is(err, driver.ErrUnsupported) {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := parseCard([]byte(`<html>`)); !errors.Is(err, driver.ErrProtocol) {
		t.Errorf("html card: %v", err)
	}
}

func TestApprovalWords(t *testing.T) {
	tests := []struct {
		q       string
		yes, no string
		ok      bool
	}{
		{"approve? yes/no", "yes", "no", true},
		{"Delete the branch? (y/n)", "y", "n", true},
		{"Proceed [Y/n]", "y", "n", true},
		{"Shall I push? Yes / No", "yes", "no", true},
		{"Answer yes or no: deploy?", "yes", "no", true},
		{"What is your name?", "", "", false},
		{"Say yesterday/nothing", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		yes, no, ok := approvalWords(tt.q)
		if yes != tt.yes || no != tt.no || ok != tt.ok {
			t.Errorf("approvalWords(%q) = %q, %q, %v", tt.q, yes, no, ok)
		}
	}
}
