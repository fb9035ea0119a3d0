package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// funcHandler adapts functions to Handler; nil functions ignore
// notifications and answer requests with -32601.
type funcHandler struct {
	notify  func(ctx context.Context, method string, params json.RawMessage)
	request func(ctx context.Context, method string, params json.RawMessage) (any, error)
}

func (h *funcHandler) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	if h.notify != nil {
		h.notify(ctx, method, params)
	}
}

func (h *funcHandler) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	if h.request != nil {
		return h.request(ctx, method, params)
	}
	return nil, ErrMethodNotFound(method)
}

// connPair connects two Conns with io.Pipes; both are closed at cleanup.
func connPair(t *testing.T, ha, hb Handler, oa, ob Options) (a, b *Conn) {
	t.Helper()
	abR, abW := io.Pipe() // a writes, b reads
	baR, baW := io.Pipe() // b writes, a reads
	a = NewConn(baR, abW, ha, oa)
	b = NewConn(abR, baW, hb, ob)
	t.Cleanup(func() {
		a.Close(nil)
		b.Close(nil)
		<-a.Done()
		<-b.Done()
	})
	return a, b
}

// rawPeer is a scripted peer speaking raw lines to a Conn.
type rawPeer struct {
	t     *testing.T
	w     *io.PipeWriter // lines for the Conn to read
	lines chan []byte    // lines the Conn wrote
}

func newRawPeer(t *testing.T, h Handler, opts Options) (*Conn, *rawPeer) {
	t.Helper()
	inR, inW := io.Pipe()   // peer -> conn
	outR, outW := io.Pipe() // conn -> peer
	c := NewConn(inR, outW, h, opts)
	p := &rawPeer{t: t, w: inW, lines: make(chan []byte, 1024)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(p.lines)
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			select {
			case p.lines <- line[:len(line)-1]:
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() {
		c.Close(nil)
		inW.Close()
		outR.Close()
		close(stop)
		wg.Wait()
		<-c.Done()
	})
	return c, p
}

// send writes one line to the Conn (a newline is appended).
func (p *rawPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatalf("peer send: %v", err)
	}
}

// recv returns the next line the Conn wrote, decoded loosely.
func (p *rawPeer) recv() map[string]json.RawMessage {
	p.t.Helper()
	line, ok := <-p.lines
	if !ok {
		p.t.Fatal("peer recv: conn output closed")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		p.t.Fatalf("peer recv: %q: %v", line, err)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		p.t.Errorf("message without jsonrpc 2.0: %s", line)
	}
	return m
}

// problems collects OnProblem reports.
type problems struct {
	mu   sync.Mutex
	list []Problem
}

func (ps *problems) add(p Problem) {
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
}

func (ps *problems) get() []Problem {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]Problem(nil), ps.list...)
}

// recorder records notifications in order and signals each on a channel.
type recorder struct {
	mu   sync.Mutex
	seen []string
	ch   chan string
}

func newRecorder() *recorder { return &recorder{ch: make(chan string, 1024)} }

func (r *recorder) notify(_ context.Context, method string, params json.RawMessage) {
	r.mu.Lock()
	r.seen = append(r.seen, method+" "+string(params))
	r.mu.Unlock()
	r.ch <- method
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}
