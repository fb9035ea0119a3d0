package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/tai-dev/tai/e2e/internal/build"
	"github.com/tai-dev/tai/feed"
)

// A run on a terminal elicits a form, then a URL. Both wait at the
// terminal and on the feed; a feed client answers both over the socket
// (the form after a first, invalid try the feed refuses). The agent gets
// the values, the terminal says who answered, and the result and the
// audit log record a human via each channel, the secret redacted.
func TestFeedAnswersAnElicitation(t *testing.T) {
	t.Parallel()
	rt := filepath.Join(t.TempDir(), "rt")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "result.json")
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cmd := exec.CommandContext(ctx, taiBin, "run", "--agent-cmd", builtinWith(script("elicit.yaml")), "--audit", auditPath, "--no-notify", "-o", "json", "go")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateDir, "XDG_RUNTIME_DIR="+rt, "NO_COLOR=1")
	resf, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer resf.Close()
	cmd.Stdout = resf
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var screen build.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&screen, tty); close(copied) }()

	dir := filepath.Join(rt, "tai")
	var ep feed.Endpoint
	for deadline := time.Now().Add(time.Minute); ; {
		if eps, _ := feed.List(dir); len(eps) == 1 {
			ep = eps[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no feed socket in %s; terminal:\n%s", dir, screen.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := feed.Dial(ep.Path)
	defer c.Close()

	// next waits for the next elicit.opened frame after *last.
	var last uint64
	next := func() feed.Elicitation {
		t.Helper()
		var el feed.Elicitation
		var err error
		last, err = c.Events(ctx, last, func(ev feed.Event) error {
			var f feed.ElicitFrame
			if json.Unmarshal(ev.Data, &f) == nil && f.Type == feed.FrameElicitOpened {
				el = f.Elicitation
				return errStop
			}
			return nil
		})
		if !errors.Is(err, errStop) {
			t.Fatalf("waiting for an elicitation: %v\n%s", err, screen.String())
		}
		return el
	}
	form := next()
	if form.Request.Mode != "form" || !strings.Contains(form.Request.Message, "database") || len(form.Request.Fields) != 4 {
		t.Fatalf("the form: %+v", form)
	}
	st, err := c.State(ctx)
	if err != nil || len(st.Elicitations) != 1 || st.Elicitations[0].ID != form.ID {
		t.Fatalf("state %+v, %v", st, err)
	}
	var se *feed.StatusError
	if err := c.AnswerElicitation(ctx, form.ID, "accept", map[string]any{"database": "staging", "port": 0}, "dashboard"); !errors.As(err, &se) || se.Code != 400 || !strings.Contains(se.Msg, "below the minimum") {
		t.Fatalf("an invalid form: %v", err)
	}
	if err := c.AnswerElicitation(ctx, form.ID, "accept", map[string]any{"database": "staging", "port": 5432, "password": "hunter2-feed-secret"}, "dashboard"); err != nil {
		t.Fatal(err)
	}
	url := next()
	if url.Request.Mode != "url" || url.Request.URL != "https://auth.example.com/device?code=XYZ" {
		t.Fatalf("the URL elicitation: %+v", url)
	}
	if err := c.AnswerElicitation(ctx, url.ID, "decline", nil, "feed"); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	<-copied
	if !strings.Contains(screen.String(), "(answered via dashboard: accept)") {
		t.Errorf("the terminal did not say the form was answered elsewhere:\n%s", screen.String())
	}
	data, _ := os.ReadFile(out)
	var r struct {
		ExitCode     int    `json:"exit_code"`
		Message      string `json:"message"`
		Elicitations []struct {
			Action    string         `json:"action"`
			Content   map[string]any `json:"content"`
			DecidedBy string         `json:"decided_by"`
			Via       string         `json:"via"`
		} `json:"elicitations"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("result: %v\n%s", err, data)
	}
	if r.ExitCode != 0 || len(r.Elicitations) != 2 {
		t.Fatalf("result %+v", r)
	}
	if e := r.Elicitations[0]; e.Action != "accept" || e.DecidedBy != "human" || e.Via != "dashboard" || e.Content["password"] != "[REDACTED]" {
		t.Errorf("the form's answer %+v", e)
	}
	if e := r.Elicitations[1]; e.Action != "decline" || e.DecidedBy != "human" || e.Via != "feed" {
		t.Errorf("the URL's answer %+v", e)
	}
	// The agent got the values (its message says them, the secret as its length).
	if !strings.Contains(r.Message, `database="staging"`) || !strings.Contains(r.Message, "port=5432") || !strings.Contains(r.Message, "password=<secret, 19 chars>") ||
		!strings.Contains(r.Message, "declined") {
		t.Errorf("the agent's message: %q", r.Message)
	}
	log, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "hunter2") || strings.Contains(string(data), "hunter2") {
		t.Fatal("the secret is in the audit log or the result")
	}
	var vias []string
	for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var e struct {
			Kind string
			Data struct {
				Via       string
				DecidedBy string `json:"decided_by"`
			}
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Kind == "elicitation.answer" {
			vias = append(vias, e.Data.DecidedBy+" via "+e.Data.Via)
		}
	}
	if strings.Join(vias, ", ") != "human via dashboard, human via feed" {
		t.Fatalf("the audit log's elicitation answers: %v", vias)
	}
}

// Under --cap-speak an elicitation goes to the parent and the feed at
// once: the form, left to the parent, is answered through the feed (the
// parent is sent a control_cancel_request for it); the URL is answered by
// the parent (the feed sees it closed). Each is recorded with its channel.
func TestFeedRacesTheCapSpeakParent(t *testing.T) { // not parallel: t.Setenv
	rt := filepath.Join(t.TempDir(), "rt")
	t.Setenv("XDG_RUNTIME_DIR", rt)
	p := startParent(t, t.TempDir(), "--agent-cmd", builtinWith(script("elicit.yaml")))
	p.say("go")
	isElicit := func(mode string) func(map[string]any) bool {
		return func(m map[string]any) bool {
			req, _ := m["request"].(map[string]any)
			return m["type"] == "control_request" && req["subtype"] == "elicitation" && req["mode"] == mode
		}
	}
	formReq := p.next(isElicit("form"), nil)
	eps, err := feed.List(filepath.Join(rt, "tai"))
	if err != nil || len(eps) != 1 {
		t.Fatalf("feeds %v, %v", eps, err)
	}
	c := feed.Dial(eps[0].Path)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var el feed.Elicitation
	for el.ID == "" {
		st, err := c.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Elicitations) == 1 {
			el = st.Elicitations[0]
		} else {
			time.Sleep(20 * time.Millisecond) // the feed's channel is asked alongside the parent's
		}
	}
	if err := c.AnswerElicitation(ctx, el.ID, "accept", map[string]any{"database": "prod", "port": 8080}, "feed"); err != nil {
		t.Fatal(err)
	}
	p.next(func(m map[string]any) bool {
		return m["type"] == "control_cancel_request" && m["request_id"] == formReq["request_id"]
	}, nil)
	urlReq := p.next(isElicit("url"), nil)
	p.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": urlReq["request_id"], "response": map[string]any{"action": "decline"}}})
	p.next(ofType("turn.ended"), nil)
	res, code := p.finish(nil)
	els, _ := res["elicitations"].([]any)
	if code != 0 || len(els) != 2 {
		t.Fatalf("exit %d, elicitations %v", code, res["elicitations"])
	}
	var got []string
	for _, e := range els {
		m := e.(map[string]any)
		got = append(got, fmt.Sprintf("%v by %v via %v", m["action"], m["decided_by"], m["via"]))
	}
	if strings.Join(got, ", ") != "accept by human via feed, decline by parent via parent" {
		t.Fatalf("elicitations %v", got)
	}
	if msg, _ := res["message"].(string); !strings.Contains(msg, `database="prod"`) {
		t.Fatalf("the agent did not get the feed's values: %q", msg)
	}
}

// An ask answered at the terminal, then a form filled in there: every line
// typed for the form reaches it (the ask's reader of the terminal does
// not swallow one).
func TestTerminalAskThenForm(t *testing.T) {
	t.Parallel()
	scr := writeScript(t, `steps:
  - permission: {title: "deploy", kind: execute, command: "make deploy"}
  - elicit_form:
      message: "Which database?"
      schema:
        properties:
          database: {type: string, enum: [dev, prod], default: dev}
          token: {type: string, format: password}
        required: [database]
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "result.json")
	// --approve ask: the terminal question before the form is the subject.
	cmd := exec.CommandContext(ctx, taiBin, "run", "--agent-cmd", builtinWith(scr), "--approve", "ask", "--no-feed", "--no-notify", "-o", "json", "go")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+stateDir, "NO_COLOR=1")
	resf, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer resf.Close()
	cmd.Stdout = resf
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var screen build.Buffer
	go func() { _, _ = io.Copy(&screen, tty) }()
	waitFor := func(after, want string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; {
			s := screen.String()
			if i := strings.LastIndex(s, after); i >= 0 && strings.Contains(s[i:], want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the terminal never showed %q after %q:\n%s", want, after, s)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	send := func(s string) {
		t.Helper()
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("deploy", "deny always >")
	send("y")
	waitFor("database (one of the choices, required)", "> [dev] ")
	send("prod\n")
	waitFor("token (string, password", "> ")
	send("t0ken\r")
	waitFor("Send these answers?", "[Y/n] ")
	send("y\n")
	_ = cmd.Wait()
	data, _ := os.ReadFile(out)
	var r struct {
		ExitCode int    `json:"exit_code"`
		Message  string `json:"message"`
	}
	if err := json.Unmarshal(data, &r); err != nil || r.ExitCode != 0 {
		t.Fatalf("result %s: %v\n%s", data, err, screen.String())
	}
	if !strings.Contains(r.Message, `database="prod"`) || !strings.Contains(r.Message, "token=<secret, 5 chars>") {
		t.Fatalf("the agent got %q\n%s", r.Message, screen.String())
	}
	if strings.Contains(screen.String(), "t0ken") {
		t.Fatalf("the secret was echoed:\n%s", screen.String())
	}
}
