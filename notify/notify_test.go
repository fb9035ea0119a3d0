package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/quartz"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type recorder struct {
	mu      sync.Mutex
	batches [][]string
	got     chan struct{}
}

func (r *recorder) Send(_ context.Context, b []Notice) error {
	r.mu.Lock()
	var titles []string
	for _, n := range b {
		titles = append(titles, n.Title)
	}
	r.batches = append(r.batches, titles)
	r.mu.Unlock()
	r.got <- struct{}{}
	return nil
}

func TestCoalesces(t *testing.T) {
	clk := quartz.NewMock(t)
	rec := &recorder{got: make(chan struct{}, 10)}
	n := New(clk, 3*time.Second, nil, rec)
	n.Notify(Notice{Kind: "ask", Run: "r", Title: "a"})
	<-rec.got // the first goes at once
	n.Notify(Notice{Kind: "ask", Run: "r", Title: "b"})
	n.Notify(Notice{Kind: "ask", Run: "r", Title: "c"})
	clk.Advance(3 * time.Second).MustWait(context.Background())
	<-rec.got // the burst goes together when the window ends
	clk.Advance(3 * time.Second).MustWait(context.Background())
	n.Notify(Notice{Kind: "ask", Run: "r", Title: "d"}) // a quiet window later: at once
	<-rec.got
	n.Notify(Notice{Kind: "ask", Run: "r", Title: "e"})
	n.Close() // what is pending is sent
	if got := strings.Join(flatten(rec.batches), " | "); got != "a | b,c | d | e" {
		t.Fatalf("batches %s", got)
	}
}

func flatten(b [][]string) []string {
	var out []string
	for _, x := range b {
		out = append(out, strings.Join(x, ","))
	}
	return out
}

// The notice's text is the agent's: nothing in it may end the OSC (BEL,
// ESC \, or the C1 ST a UTF-8 terminal may take), start another sequence
// or reorder what the notification shows; it is shown escaped.
func TestTerminal(t *testing.T) {
	for _, tt := range []struct{ name, title, want string }{
		{"OSC and BEL", "Run `rm -rf`\x1b]0;evil\x07", `Run ` + "`rm -rf`" + `\x1b]0;evil\x07`},
		{"C1 string terminator", "Run tests\u009c\u009b2J", `Run tests\u009c\u009b2J`},
		{"bidi override", "Run \u202eexe.txt", `Run \u202eexe.txt`},
		{"newline", "a\nb", `a\nb`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := (Terminal{W: &buf}).Send(context.Background(), []Notice{{Kind: "ask", Run: "r", Task: "lint\x1b[2K", Title: tt.title}}); err != nil {
				t.Fatal(err)
			}
			want := "\a\x1b]9;task lint\\x1b[2K ask: " + tt.want + "\x07"
			if got := buf.String(); got != want {
				t.Fatalf("got  %q\nwant %q", got, want)
			}
		})
	}
}

func TestWebhook(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(400)
		}
	}))
	defer srv.Close()
	err := Webhook{URL: srv.URL}.Send(context.Background(), []Notice{{Kind: "ask", Run: "r", Title: "a"}, {Kind: "question", Run: "r", Title: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if ns, _ := body["notices"].([]any); len(ns) != 2 || !strings.HasPrefix(body["text"].(string), "2 things wait for you") {
		t.Fatalf("body %v", body)
	}
	// A notice with a link to tai serve's page: ntfy-style topics open it on a tap.
	var click string
	linked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { click = r.Header.Get("Click") }))
	defer linked.Close()
	if err := (Webhook{URL: linked.URL}).Send(context.Background(), []Notice{{Kind: "ask", Run: "r", Title: "a", Link: "http://h:1/#item-r-ask-1"}}); err != nil || click != "http://h:1/#item-r-ask-1" {
		t.Fatalf("the Click header %q (%v)", click, err)
	}
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer failing.Close()
	if err := (Webhook{URL: failing.URL}).Send(context.Background(), []Notice{{Title: "a"}}); err == nil {
		t.Fatal("a 500 was taken as delivered")
	}
}
