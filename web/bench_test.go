package web

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
)

// benchFixture is newFixture for a benchmark: a live feed, the page over
// it, and a client of the page's event stream.
func benchFixture(b *testing.B) (*fixture, *bufio.Reader) {
	f := newFixtureTB(b, notConfined)
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/api/events", nil)
	req.Header.Set("Cookie", cookieName+"="+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { resp.Body.Close() })
	return f, bufio.NewReader(resp.Body)
}

// waitFrame reads the event stream until a frame of type typ.
func waitFrame(b *testing.B, r *bufio.Reader, typ string) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"type":"`+typ+`"`) {
			return
		}
	}
}

func report(b *testing.B, what string, ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), what+"-p50-ms")
	b.ReportMetric(q(0.99), what+"-p99-ms")
	b.ReportMetric(0, "ns/op")
}

func (f *fixture) askAsync(ctx context.Context) <-chan string {
	out := make(chan string, 1)
	go func() {
		_, via, err := f.feed.Channel().Ask(ctx, driver.PermissionRequest{ID: "p",
			ToolCall: driver.ToolCall{ID: "tc", Title: "deploy", Kind: driver.KindExecute, RawInput: []byte(`{"command":"make deploy"}`)}})
		if err != nil {
			out <- err.Error()
			return
		}
		out <- string(via)
	}()
	return out
}

// BenchmarkAskToPage: an agent's permission request put to the feed, to
// its row on the page: the ask.opened frame on the page's event stream,
// then the page's main part, fetched as the script does, holding it.
func BenchmarkAskToPage(b *testing.B) {
	f, events := benchFixture(b)
	c := &http.Client{}
	var ds []time.Duration
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		done := f.askAsync(ctx)
		waitFrame(b, events, "ask.opened")
		req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/?fragment=main", nil)
		req.Header.Set("Cookie", cookieName+"="+testToken)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(page), ItemAnchor("r1", "ask-")) {
			b.Fatalf("the page has no ask:\n%s", page)
		}
		ds = append(ds, time.Since(start))
		<-f.asks
		cancel()
		<-done
		waitFrame(b, events, "ask.closed")
	}
	report(b, "ask-to-row", ds)
}

// BenchmarkClickToAnswer: the page's form POSTed (a tap on "Allow once"),
// to the agent's side of the feed holding the answer.
func BenchmarkClickToAnswer(b *testing.B) {
	f, events := benchFixture(b)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var ds []time.Duration
	for b.Loop() {
		done := f.askAsync(context.Background())
		a := <-f.asks
		waitFrame(b, events, "ask.opened")
		form := url.Values{"answer": {"once"}, "csrf": {csrfToken(testToken)}}
		req, _ := http.NewRequest(http.MethodPost, f.ts.URL+"/api/runs/r1/asks/"+a.ID, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookieName+"="+testToken)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		start := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if via := <-done; via != string(ask.ViaWeb) {
			b.Fatalf("answered %q", via)
		}
		ds = append(ds, time.Since(start))
		waitFrame(b, events, "ask.closed")
	}
	report(b, "click-to-answer", ds)
}
