package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/feed"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef"

func notConfined(net.Conn) (bool, string) { return false, "" }

// fixture is one live run's feed in a temp directory and the page over it.
type fixture struct {
	feed *feed.Server
	ts   *httptest.Server
	asks chan feed.Ask // each ask as it opens
	mu   sync.Mutex
	ans  []feed.Answered
}

func newFixture(t *testing.T, confined func(net.Conn) (bool, string)) *fixture {
	return newFixtureTB(t, confined)
}

func newFixtureTB(t testing.TB, confined func(net.Conn) (bool, string)) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{asks: make(chan feed.Ask, 16)}
	fs, err := feed.Open(feed.Options{Run: "r1", Dir: dir, Confined: notConfined, OnAsk: func(a feed.Ask) { f.asks <- a }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	f.feed = fs
	fs.OnAnswer(func(a feed.Answered) { f.mu.Lock(); f.ans = append(f.ans, a); f.mu.Unlock() })
	srv, err := New(Options{Feeds: dir, Token: testToken, Confined: confined})
	if err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewUnstartedServer(srv)
	f.ts.Config.ConnContext = srv.ConnContext
	f.ts.Start()
	t.Cleanup(f.ts.Close)
	return f
}

// ask puts a permission request to the feed; the answer comes on the channel.
func (f *fixture) ask(t *testing.T, title string) <-chan [2]string {
	t.Helper()
	out := make(chan [2]string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := f.feed.Channel()
	go func() {
		rep, via, err := ch.Ask(ctx, driver.PermissionRequest{ID: "p1",
			ToolCall: driver.ToolCall{ID: "tc1", Title: title, Kind: driver.KindExecute, RawInput: []byte(`{"command":"rm -rf build"}`)}})
		if err != nil {
			out <- [2]string{"error", err.Error()}
			return
		}
		out <- [2]string{fmt.Sprint(rep.Answer), string(via)}
	}()
	<-f.asks
	return out
}

func (f *fixture) do(t *testing.T, method, path string, form url.Values, hdr map[string]string) *http.Response {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, f.ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestTokenAndCSRF(t *testing.T) {
	f := newFixture(t, notConfined)
	answer := f.ask(t, "<script>alert(1)</script> deploy")
	cookie := cookieName + "=" + testToken
	csrf := csrfToken(testToken)
	origin := f.ts.URL
	post := url.Values{"answer": {"once"}, "csrf": {csrf}}
	tests := []struct {
		name   string
		method string
		path   string
		form   url.Values
		hdr    map[string]string
		code   int
	}{
		{"no token", "GET", "/", nil, nil, http.StatusUnauthorized},
		{"no token, api", "GET", "/api/runs", nil, nil, http.StatusUnauthorized},
		{"a wrong link", "GET", "/?token=nope", nil, nil, http.StatusUnauthorized},
		{"a wrong cookie", "GET", "/", nil, map[string]string{"Cookie": cookieName + "=x"}, http.StatusUnauthorized},
		{"the cookie", "GET", "/", nil, map[string]string{"Cookie": cookie}, http.StatusOK},
		{"a bearer token", "GET", "/api/runs", nil, map[string]string{"Authorization": "Bearer " + testToken}, http.StatusOK},
		{"a POST without the token", "POST", "/api/runs/r1/asks/ask-1", post, map[string]string{"Origin": origin}, http.StatusUnauthorized},
		{"a POST without CSRF", "POST", "/api/runs/r1/asks/ask-1", url.Values{"answer": {"once"}},
			map[string]string{"Cookie": cookie, "Origin": origin}, http.StatusForbidden},
		{"a cross-site POST", "POST", "/api/runs/r1/asks/ask-1", post,
			map[string]string{"Cookie": cookie, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"a same-site POST of another origin", "POST", "/api/runs/r1/asks/ask-1", post,
			map[string]string{"Cookie": cookie, "Origin": "http://127.0.0.1:1", "Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.do(t, tt.method, tt.path, tt.form, tt.hdr)
			if resp.StatusCode != tt.code {
				t.Fatalf("%s %s: %d, want %d", tt.method, tt.path, resp.StatusCode, tt.code)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("CSP %q", csp)
			}
		})
	}
	select {
	case a := <-answer:
		t.Fatalf("a refused POST answered: %v", a)
	default:
	}

	// The link signs in: an HttpOnly, SameSite=Strict cookie.
	resp := f.do(t, "GET", "/?token="+testToken, nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the link: %d", resp.StatusCode)
	}
	ck := resp.Cookies()
	if len(ck) != 1 || ck[0].Value != testToken || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("the link's cookie: %+v", ck)
	}

	// The page shows the ask, escaped, with its command.
	page := f.do(t, "GET", "/", nil, map[string]string{"Cookie": cookie})
	var b strings.Builder
	if _, err := io.Copy(&b, page.Body); err != nil {
		t.Fatal(err)
	}
	if html := b.String(); strings.Contains(html, "<script>alert") || !strings.Contains(html, "&lt;script&gt;") || !strings.Contains(html, "rm -rf build") {
		t.Fatalf("the page does not show the ask escaped with its command:\n%s", html)
	}

	// The page's own POST answers it, via web, from the browser's address.
	resp = f.do(t, "POST", "/api/runs/r1/asks/ask-1", post, map[string]string{"Cookie": cookie, "Origin": origin, "Sec-Fetch-Site": "same-origin"})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || strings.Contains(loc, "note=") {
		t.Fatalf("the answer: %d, to %s", resp.StatusCode, loc)
	}
	if got := <-answer; got[1] != string(ask.ViaWeb) {
		t.Fatalf("answered %v, want via web", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ans) != 1 || f.ans[0].Via != ask.ViaWeb || !strings.HasPrefix(f.ans[0].Client, "127.0.0.1:") || f.ans[0].Answer != "once" {
		t.Fatalf("the feed heard %+v", f.ans)
	}
}

func TestConfinedPeerRefused(t *testing.T) {
	f := newFixture(t, func(net.Conn) (bool, string) { return true, "pid 42 is in an agent's cgroup" })
	resp := f.do(t, "GET", "/?token="+testToken, nil, nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a sandboxed peer with the token: %d, want 403", resp.StatusCode)
	}
}

func TestFormContent(t *testing.T) {
	one, five := 1.0, 5.0
	req := driver.ElicitationRequest{Mode: driver.ElicitForm, Fields: []driver.ElicitField{
		{Name: "db", Type: "string", Enum: []string{"dev", "prod"}},
		{Name: "n", Type: "integer", Minimum: &one, Maximum: &five},
		{Name: "ratio", Type: "number"},
		{Name: "ok", Type: "boolean"},
		{Name: "tags", Type: "array", Enum: []string{"a", "b"}},
		{Name: "note", Type: "string"},
	}}
	for _, c := range []struct {
		name string
		form url.Values
		want string
		err  string
	}{
		{"typed", url.Values{"f.db": {"prod"}, "f.n": {"3"}, "f.ratio": {"0.5"}, "f.ok": {"true"}, "f.tags": {"a", "b"}, "f.note": {" x "}},
			`{"db":"prod","n":3,"note":" x ","ok":true,"ratio":0.5,"tags":["a","b"]}`, ""},
		{"empty fields left to the feed's defaults", url.Values{}, `{"ok":false}`, ""},
		{"not a whole number", url.Values{"f.n": {"2.5"}}, "", "not a whole number"},
		{"not a number", url.Values{"f.ratio": {"half"}}, "", "not a number"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := formContent(req, c.form)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			b, _ := json.Marshal(got)
			if err != nil || string(b) != c.want {
				t.Fatalf("got %s (%v), want %s", b, err, c.want)
			}
		})
	}
}

// A fleet is paused and released from the page through its feed, as via
// web with the browser's address; a run that is not a fleet's says so
// (the feed's 501); a form without its CSRF token is refused.
func TestPauseAndReleaseAFleet(t *testing.T) {
	dir := t.TempDir()
	hands := make(chan feed.Hand, 4)
	for run, fleet := range map[string]bool{"r1": false, "f1": true} {
		fs, err := feed.Open(feed.Options{Run: run, Kind: map[bool]feed.Kind{false: feed.KindRun, true: feed.KindFleet}[fleet], Dir: dir, Confined: notConfined})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fs.Close() })
		if fleet {
			fs.OnHand(func(h feed.Hand) { hands <- h })
		}
	}
	srv, err := New(Options{Feeds: dir, Token: testToken, Confined: notConfined})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.ConnContext = srv.ConnContext
	ts.Start()
	t.Cleanup(ts.Close)
	f := &fixture{ts: ts}
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	cookie := map[string]string{"Cookie": cookieName + "=" + testToken, "Origin": ts.URL}
	tests := []struct {
		name, path string
		form       url.Values
		hdr        map[string]string
		code       int
		hand       feed.HandAction // what reached the fleet
	}{
		{"pause", "/api/runs/f1/pause", nil, bearer, http.StatusOK, feed.HandPause},
		{"release", "/api/runs/f1/release", nil, bearer, http.StatusOK, feed.HandRelease},
		{"the page's form", "/api/runs/f1/pause", url.Values{"csrf": {csrfToken(testToken)}, "return": {"/runs/f1"}}, cookie, http.StatusSeeOther, feed.HandPause},
		{"a form without its CSRF token", "/api/runs/f1/pause", url.Values{"return": {"/runs/f1"}}, cookie, http.StatusForbidden, ""},
		{"a single run", "/api/runs/r1/pause", nil, bearer, http.StatusNotImplemented, ""},
		{"no such run", "/api/runs/nope/release", nil, bearer, http.StatusNotFound, ""},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			resp := f.do(t, "POST", c.path, c.form, c.hdr)
			if resp.StatusCode != c.code {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("%s: %d %s, want %d", c.path, resp.StatusCode, b, c.code)
			}
			var got feed.Hand
			select {
			case got = <-hands:
			default:
			}
			if got.Action != c.hand {
				t.Fatalf("the fleet got %+v, want %q", got, c.hand)
			}
			if c.hand != "" && (got.Via != ask.ViaWeb || !strings.HasPrefix(got.Client, "127.0.0.1:")) {
				t.Fatalf("the hand %+v: want via web with the browser's address", got)
			}
		})
	}
}
