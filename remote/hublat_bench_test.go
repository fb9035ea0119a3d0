package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/coder/quartz"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/policy"
	"github.com/tai-dev/tai/web"
)

const hubLatToken = "0123456789abcdef0123456789abcdef0123456789abcdef"

// hubLat is a hub on loopback (go.mod's nats-server) with, in this
// process: a worker's side of a task's asks (its asker, over its own
// connection), the run's coordinator serving asks (over another), racing
// the submitter's channel against the run's live feed as tai hub
// --coordinate does (app.hubHuman), and the page (tai hub --serve's
// web.Server) over that feed, with a client of its event stream.
type hubLat struct {
	worker prompter
	page   *httptest.Server
	frames <-chan feed.AskFrame // the page's event stream's frames
}

func startHubLat(b *testing.B) *hubLat {
	b.Helper()
	h := startHub(b)
	const run, task, worker = "hublat", "t", "w0"
	cbus, wbus := openBus(b, h.url, "coordinator"), openBus(b, h.url, worker)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	// The attempt holds the task's lease: the coordinator answers only its asks.
	if _, err := cbus.PutLease(ctx, run, task, Lease{State: LeaseClaimed, Worker: worker, Attempt: 1}, 0); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	// Not confined: the benchmark's own HTTP client is the human's browser.
	notConfined := func(net.Conn) (bool, string) { return false, "" }
	fs, err := feed.Open(feed.Options{Run: run, Dir: dir, Confined: notConfined})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fs.Close() })
	c := &coordinator{o: CoordinatorOptions{RunID: run, Prompter: policy.Race(Submitter{Bus: cbus, Run: run}.Channel(), fs.Channel())},
		bus: cbus, e: quietEngine{}, mem: policy.NewMemory(policy.ScopeRun), clock: quartz.NewReal(),
		log: slog.New(slog.DiscardHandler), results: map[string]chan Lease{task: nil}}
	served := make(chan struct{})
	go func() { defer close(served); c.serveAsks(ctx) }()
	b.Cleanup(func() { cancel(); <-served })

	srv, err := web.New(web.Options{Feeds: dir, Token: hubLatToken, Confined: notConfined})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.ConnContext = srv.ConnContext
	ts.Start()
	b.Cleanup(ts.Close)
	resp, err := pageDo(ts, http.MethodGet, "/api/events", nil)
	if err != nil {
		b.Fatal(err)
	}
	frames := make(chan feed.AskFrame)
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(frames)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			var f feed.AskFrame
			if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &f) == nil {
				select {
				case frames <- f:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	b.Cleanup(func() { cancel(); resp.Body.Close(); <-read })
	return &hubLat{worker: prompter{k: &asker{bus: wbus, tm: TaskMsg{Run: run, Task: task}, attempt: 1, worker: worker}},
		page: ts, frames: frames}
}

// pageDo is the page's browser: its cookie, and a same-origin form post.
func pageDo(ts *httptest.Server, method, path string, form url.Values) (*http.Response, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, ts.URL+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Cookie", "tai_web="+hubLatToken)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return c.Do(req)
}

// frame waits for the page's next frame of type typ; an ask that ends
// first (done: refused, failed) fails the benchmark rather than hang it.
func (l *hubLat) frame(b *testing.B, typ string, done <-chan string) feed.AskFrame {
	for {
		select {
		case f, ok := <-l.frames:
			if !ok {
				b.Fatal("the page's event stream ended")
			}
			if f.Type == typ {
				return f
			}
		case got := <-done:
			b.Fatalf("the worker's ask ended before its %s frame: %s", typ, got)
		}
	}
}

// askAsync is the worker's ask, as its policy puts a permission request
// to the coordinator's human (prompter.AskVia).
func (l *hubLat) askAsync() <-chan string {
	out := make(chan string, 1)
	go func() {
		ans, via, err := l.worker.AskVia(context.Background(), driver.PermissionRequest{ID: "p",
			ToolCall: driver.ToolCall{ID: "tc", Title: "deploy", Kind: driver.KindExecute, RawInput: []byte(`{"command":"make deploy"}`)}})
		if err != nil {
			out <- err.Error()
			return
		}
		if ans != policy.AllowOnce {
			out <- fmt.Sprint("answered ", ans)
			return
		}
		out <- string(via)
	}()
	return out
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// row fetches the page's main part, as its script does on a frame, and
// says the ask's form's CSRF token once the ask's row is there.
func (l *hubLat) row(b *testing.B, run string) string {
	resp, err := pageDo(l.page, http.MethodGet, "/?fragment=main", nil)
	if err != nil {
		b.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(page)
	if !strings.Contains(string(page), web.ItemAnchor(run, "ask-")) || m == nil {
		b.Fatalf("the page has no ask:\n%s", page)
	}
	return string(m[1])
}

// BenchmarkHubLatency: through a hub on loopback, a worker's permission
// ask to its row on the hub's page (the ask.opened frame on the page's
// event stream, then the page's main part holding the ask), and a click
// (the page's form POSTed) to the answer back at the asking worker. Each
// includes the ask's JetStream KV round trips (the worker's ask put and
// watched, the coordinator's watch and reply, the submitter's channel
// opened and withdrawn) and the lease check. Not included: the agent's
// JSON-RPC to the worker and the worker's policy before it asks (local,
// as in a local run), and the browser's rendering.
func BenchmarkHubLatency(b *testing.B) {
	l := startHubLat(b)
	var toRow, toAnswer []time.Duration
	for b.Loop() {
		start := time.Now()
		done := l.askAsync()
		f := l.frame(b, feed.FrameAskOpened, done)
		csrf := l.row(b, f.Run)
		toRow = append(toRow, time.Since(start))

		form := url.Values{"answer": {"once"}, "csrf": {csrf}}
		start = time.Now()
		resp, err := pageDo(l.page, http.MethodPost, "/api/runs/"+f.Run+"/asks/"+f.Ask.ID, form)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			b.Fatalf("the click: %s", resp.Status)
		}
		if via := <-done; via != string(ask.ViaWeb) {
			b.Fatalf("the worker got %q", via)
		}
		toAnswer = append(toAnswer, time.Since(start))
		l.frame(b, feed.FrameAskClosed, nil)
	}
	reportLat(b, "ask-to-row", toRow)
	reportLat(b, "click-to-answer", toAnswer)
	b.ReportMetric(0, "ns/op")
}

// reportLat reports ds' p50 and p99 in ms, as web's benchmarks do.
func reportLat(b *testing.B, what string, ds []time.Duration) {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), what+"-p50-ms")
	b.ReportMetric(q(0.99), what+"-p99-ms")
}
