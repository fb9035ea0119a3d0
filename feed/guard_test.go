package feed

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/redact"
)

// Every request on the socket and on TCP is refused from inside a sandbox
// (403) or without the secret (401), each refusal heard by OnRefuse; from
// outside with the secret, it is served.
func TestGuard(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tcp      bool
		confined bool
		token    string // "secret": the right one
		want     int
	}{
		{"socket outside with the secret", false, false, "secret", http.StatusOK},
		{"socket from a sandbox with the secret", false, true, "secret", http.StatusForbidden},
		{"socket outside without a token", false, false, "", http.StatusUnauthorized},
		{"socket outside with a wrong token", false, false, "nope", http.StatusUnauthorized},
		{"tcp outside with the token", true, false, "secret", http.StatusOK},
		{"tcp from a sandbox with the token", true, true, "secret", http.StatusForbidden},
		{"tcp outside without a token", true, false, "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(Options{Run: "run-guard", Dir: dir, Confined: func(net.Conn) (bool, string) {
				if tc.confined {
					return true, "pid 42 runs below tai's launcher"
				}
				return false, ""
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var mu sync.Mutex
			var refusals []Refusal
			s.OnRefuse(func(r Refusal) { mu.Lock(); refusals = append(refusals, r); mu.Unlock() })
			var c *Client
			if tc.tcp {
				addr, tok, err := s.Listen("127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				c = DialTCP(addr, map[string]string{"secret": tok, "": "", "nope": "nope"}[tc.token])
			} else {
				c = Dial(s.Path())
				switch tc.token {
				case "":
					c.token = ""
				case "nope":
					c.token = "nope"
				}
			}
			defer c.Close()
			_, err = c.State(context.Background())
			var se *StatusError
			switch {
			case tc.want == http.StatusOK && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != http.StatusOK && (!errors.As(err, &se) || se.Code != tc.want):
				t.Fatalf("got %v, want %d", err, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if want := map[bool]int{true: 0, false: 1}[tc.want == http.StatusOK]; len(refusals) != want {
				t.Fatalf("refusals %+v, want %d", refusals, want)
			}
			if len(refusals) == 1 && (refusals[0].Path != "/state" || refusals[0].Reason == "" ||
				(tc.confined && !strings.Contains(refusals[0].Reason, "launcher"))) {
				t.Fatalf("refusal %+v", refusals[0])
			}
		})
	}
}

// The secret is made once, private, and shared by the runs of a directory.
func TestSecret(t *testing.T) {
	dir := t.TempDir()
	a, err := Secret(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Secret(dir)
	if err != nil || a != b || len(a) < 32 {
		t.Fatalf("secrets %q, %q, %v", a, b, err)
	}
	p := secretPath(dir)
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file %v, %v", st.Mode(), err)
	}
	// One others could read is refused, not used.
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Secret(dir); err == nil || !strings.Contains(err.Error(), "not a private file") {
		t.Fatalf("a readable secret: %v", err)
	}
}

// Frames and the snapshot are served redacted by the run's redactor.
func TestServedRedacted(t *testing.T) {
	const secret = "s3cr3t-literal-0123456789"
	s := open(t, t.TempDir(), "run-redact")
	red, err := redact.New(redact.Options{Literals: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	s.SetRedactor(red)
	k := s.Sink("")
	k.Emit(driver.Event{Type: driver.EventMessage, Session: "s1", Seq: 1,
		Message: &driver.MessageChunk{Role: driver.RoleAgent, Text: "the token is " + secret}})
	c := Dial(s.Path())
	defer c.Close()
	var got string
	_, err = c.Events(context.Background(), 0, func(ev Event) error {
		got = string(ev.Data)
		return errDrop
	})
	if !errors.Is(err, errDrop) || strings.Contains(got, secret) || !strings.Contains(got, redact.Replacement) {
		t.Fatalf("frame %s (%v)", got, err)
	}
	st, err := c.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	if strings.Contains(string(b), secret) {
		t.Fatalf("state %s", b)
	}
}

// An elicitation's URL is served whole (the human opens it); the rest of
// its frame, and of the snapshot, is redacted.
func TestElicitationURLServedWhole(t *testing.T) {
	const secret = "s3cr3t-literal-0123456789"
	red, err := redact.New(redact.Options{Literals: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	url := "https://auth.example.com/device?code=XYZ&token=abcdef123456"
	e := Elicitation{ID: "el-1", Request: driver.ElicitationRequest{ID: "1", Mode: driver.ElicitURL, Message: "log in with " + secret, URL: url}}
	frame, _ := json.Marshal(ElicitFrame{Type: FrameElicitOpened, Run: "r", Elicitation: e})
	var f ElicitFrame
	if err := json.Unmarshal(redactFrame(red, frame), &f); err != nil {
		t.Fatal(err)
	}
	b, err := redactState(red, State{Elicitations: []Elicitation{e}})
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string]Elicitation{"frame": f.Elicitation, "state": st.Elicitations[0]} {
		if got.Request.URL != url || strings.Contains(got.Request.Message, secret) {
			t.Errorf("%s: %+v", what, got.Request)
		}
	}
}

// The secret directories of both feed directories a user's tai may use
// exist once asked for (the sandbox can hide only what exists), private.
func TestSecretDirs(t *testing.T) {
	rt, tmp := t.TempDir(), t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("TMPDIR", tmp)
	got := SecretDirs()
	want := []string{rt + "/tai/secret", tmp + "/tai-" + strconv.Itoa(os.Getuid()) + "/secret"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("SecretDirs() = %v, want %v", got, want)
	}
	for _, d := range got {
		if st, err := os.Stat(d); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v", d, st, err)
		}
	}
}
