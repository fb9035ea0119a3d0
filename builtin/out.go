package builtin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
)

// errSealed is returned for writes after a crash step: a crashed process
// writes nothing more.
var errSealed = errors.New("builtin: output sealed after crash")

// outWriter is the agent's stdout as the jsonrpc.Conn sees it. It exists for
// the steps that must step outside the Conn:
//
//   - raw writes (garbage lines, the streamed big chunk) must not land in the
//     middle of a message the Conn is writing, so they wait for a line
//     boundary and hold the writer while they run;
//   - "after response" hooks (late_updates, available_commands_update right
//     after session/new) fire once the response line for a given request id
//     has been written, which the Handler API alone cannot express (a handler
//     returns its result and the Conn writes it later);
//   - a crash seals it so nothing more reaches stdout.
type outWriter struct {
	mu      sync.Mutex
	cond    *sync.Cond
	w       io.Writer
	partial bool // the last write did not end a line
	raw     bool // a raw writer holds the stream
	sealed  bool
	hooks   map[string][]func() // response id (JSON text) → callbacks
	firing  sync.WaitGroup      // hooks running
}

func newOutWriter(w io.Writer) *outWriter {
	o := &outWriter{w: w, hooks: map[string][]func(){}}
	o.cond = sync.NewCond(&o.mu)
	return o
}

func (o *outWriter) Write(p []byte) (int, error) {
	o.mu.Lock()
	for o.raw {
		o.cond.Wait()
	}
	if o.sealed {
		o.mu.Unlock()
		return 0, errSealed
	}
	n, err := o.w.Write(p)
	if n > 0 {
		o.partial = p[n-1] != '\n'
	}
	var fire []func()
	if len(o.hooks) > 0 && err == nil && !o.partial {
		if id, ok := responseID(p); ok {
			fire = o.hooks[id]
			delete(o.hooks, id)
		}
	}
	if len(fire) > 0 {
		o.firing.Add(1)
		defer o.firing.Done()
	}
	o.cond.Broadcast()
	o.mu.Unlock()
	for _, f := range fire {
		f()
	}
	return n, err
}

// quiesce waits for the write in progress and the hooks it fired, so that
// what they start is known.
func (o *outWriter) quiesce() {
	o.mu.Lock()
	for o.raw { // a raw write in progress
		o.cond.Wait()
	}
	o.mu.Unlock()
	o.firing.Wait()
}

// afterResponse registers f to run (on the writing goroutine, after the
// line is out) once the response to request id has been written. f must not
// block; it typically starts a goroutine.
func (o *outWriter) afterResponse(id string, f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hooks[id] = append(o.hooks[id], f)
}

// writeRaw runs fn with exclusive use of the underlying writer, starting at
// a line boundary. fn must leave the stream at a line boundary too.
func (o *outWriter) writeRaw(fn func(w io.Writer) error) error {
	o.mu.Lock()
	for o.raw || o.partial {
		o.cond.Wait()
	}
	if o.sealed {
		o.mu.Unlock()
		return errSealed
	}
	o.raw = true
	o.mu.Unlock()

	err := fn(o.w)

	o.mu.Lock()
	o.raw = false
	o.cond.Broadcast()
	o.mu.Unlock()
	return err
}

// seal makes every later write fail.
func (o *outWriter) seal() {
	o.mu.Lock()
	o.sealed = true
	o.hooks = map[string][]func(){}
	o.mu.Unlock()
}

// responseID reports the id of a JSON-RPC response line ("id" present, no
// "method"). Only called while hooks are pending, so the decode cost is rare.
func responseID(line []byte) (string, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || len(line) > 1<<20 {
		return "", false
	}
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(line, &head) != nil || head.Method != nil || len(head.ID) == 0 {
		return "", false
	}
	return string(head.ID), true
}
