package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
)

// CloseWrite ends what a sends (b reads EOF) while a still reads what b
// sends; a later write from a fails without ending a's connection. With
// KeepOpenOnEOF, b's connection stays writable after that EOF, and b's
// pending calls fail at once.
func TestCloseWriteAndKeepOpenOnEOF(t *testing.T) {
	got := make(chan string, 4)
	ha := &funcHandler{notify: func(_ context.Context, method string, _ json.RawMessage) { got <- method }}
	a, b := connPair(t, ha, nil, Options{}, Options{KeepOpenOnEOF: true})
	ctx := context.Background()

	callErr := make(chan error, 1)
	go func() { callErr <- b.Call(ctx, "never/answered", nil, nil) }()
	// a's side has no handler for it... a answers -32601; wait for that
	// before the half-close so the order is fixed.
	if err := <-callErr; err == nil {
		t.Fatal("call to a handler-less peer succeeded")
	}
	if err := a.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	<-b.ReadDone()
	select {
	case <-b.Done():
		t.Fatal("b's connection ended on EOF despite KeepOpenOnEOF")
	default:
	}
	if err := b.Call(ctx, "after/eof", nil, nil); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("call after the peer's EOF: %v", err)
	}
	if err := b.Notify(ctx, "late/update", nil); err != nil {
		t.Fatalf("b cannot write after the peer's EOF: %v", err)
	}
	if m := <-got; m != "late/update" {
		t.Fatalf("a read %q", m)
	}
	if err := a.Notify(ctx, "x", nil); !errors.Is(err, ErrWriteClosed) {
		t.Fatalf("write after CloseWrite: %v", err)
	}
	select {
	case <-a.Done():
		t.Fatal("a write after CloseWrite ended the connection")
	default:
	}
}

// The peer's requests are served at most MaxInflight at a time, however
// many it pipelines, and every one is answered once others finish.
func TestInflightBound(t *testing.T) {
	const limit, total = 2, 20
	var mu sync.Mutex
	running, most := 0, 0
	started := make(chan struct{}, total)
	release := make(chan struct{})
	h := &funcHandler{request: func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		started <- struct{}{}
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return "ok", nil
	}}
	_, p := newRawPeer(t, h, Options{MaxInflight: limit})
	go func() {
		for i := range total {
			if _, err := io.WriteString(p.w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"m"}`+"\n", i)); err != nil {
				return
			}
		}
	}()
	for range limit {
		<-started
	}
	close(release)
	for range total {
		if m := p.recv(); string(m["result"]) != `"ok"` {
			t.Fatalf("reply %v", m)
		}
	}
	if most > limit {
		t.Fatalf("%d requests served at once, limit %d", most, limit)
	}
}
