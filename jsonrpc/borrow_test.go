package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
)

// keeper keeps every params it is given, as given, and borrows the
// notifications named "lend".
type keeper struct {
	mu       sync.Mutex
	lent     []json.RawMessage
	kept     []json.RawMessage
	requests []json.RawMessage
}

func (k *keeper) Borrows(method string, size int) bool { return method == "lend" }

func (k *keeper) HandleNotification(_ context.Context, method string, params json.RawMessage) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if method == "lend" {
		k.lent = append(k.lent, params)
	} else {
		k.kept = append(k.kept, params)
	}
}

func (k *keeper) HandleRequest(_ context.Context, method string, params json.RawMessage) (any, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.requests = append(k.requests, params)
	return nil, nil
}

// TestBorrowedParams: a Borrower's notifications get the reader's own
// buffer, which later lines overwrite, and everything else (notifications
// it does not borrow, requests) a copy that stays as it came.
func TestBorrowedParams(t *testing.T) {
	const n = 3000 // some 300 KB: the reader's buffer is refilled many times
	var wire bytes.Buffer
	for i := range n {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&wire, `{"jsonrpc":"2.0","method":"lend","params":{"i":%d,"pad":"%0100d"}}`+"\n", i, i)
		case 1:
			fmt.Fprintf(&wire, `{"jsonrpc":"2.0","method":"keep","params":{"i":%d,"pad":"%0100d"}}`+"\n", i, i)
		default:
			fmt.Fprintf(&wire, `{"jsonrpc":"2.0","id":%d,"method":"lend","params":{"i":%d,"pad":"%0100d"}}`+"\n", i, i, i)
		}
	}
	k := &keeper{}
	c := NewConn(bytes.NewReader(wire.Bytes()), io.Discard, k, Options{})
	<-c.Done()
	c.Close(nil)
	c.Wait() // requests run on their own goroutines
	check := func(what string, got []json.RawMessage, rest int) {
		t.Helper()
		if len(got) != n/3 {
			t.Fatalf("%d %s, want %d", len(got), what, n/3)
		}
		seen := map[int]bool{}
		for _, p := range got {
			var v struct{ I int }
			if err := json.Unmarshal(p, &v); err != nil || v.I%3 != rest || seen[v.I] || string(p) != fmt.Sprintf(`{"i":%d,"pad":"%0100d"}`, v.I, v.I) {
				t.Fatalf("%s: %q changed after its line (%v)", what, p, err)
			}
			seen[v.I] = true
		}
	}
	check("kept notifications", k.kept, 1)
	check("requests", k.requests, 2)
	overwritten := 0
	for i, p := range k.lent {
		if string(p) != fmt.Sprintf(`{"i":%d,"pad":"%0100d"}`, 3*i, 3*i) {
			overwritten++
		}
	}
	if overwritten == 0 {
		t.Fatal("no lent params was overwritten: the reader copied the lines it lends")
	}
}
