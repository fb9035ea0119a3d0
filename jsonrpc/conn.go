package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/tai-dev/tai/internal/jsonw"
	"github.com/tai-dev/tai/internal/lines"
)

// Handler serves the peer's messages.
type Handler interface {
	// HandleNotification is called in wire order on one dispatch goroutine.
	// It must not block on Conn.Call: the response would be queued behind
	// this very notification.
	HandleNotification(ctx context.Context, method string, params json.RawMessage)
	// HandleRequest is called on its own goroutine, only after every
	// notification that preceded the request on the wire has been handled.
	// Returning an *Error sends it verbatim; any other error becomes -32603
	// with its message (or -32800 if it is ctx's cancellation). ctx is
	// cancelled by an inbound $/cancel_request for this request, or when the
	// conn closes; [RequestID] gives the peer's id.
	HandleRequest(ctx context.Context, method string, params json.RawMessage) (result any, err error)
}

// A Borrower is a Handler that takes some notifications' params on loan.
// When Borrows reports true for a notification's method and the size of
// its line, the params HandleNotification gets are valid only until it
// returns: the handler copies whatever it keeps. The reader then spares
// the copy of the line it makes for everything else, which is most of
// what a flood of updates allocates.
type Borrower interface {
	Borrows(method string, size int) bool
}

// An Arriver is a Handler told of each request as it comes, in wire order
// on the dispatch goroutine, before the request's own goroutine runs it.
// Requests run at once, so one that must wait for an earlier one (a
// session/new pipelined after initialize) can know what came before it.
// Arrived must not block.
type Arriver interface {
	Arrived(method string, id ID)
}

// Direction tells a Trace hook which way a line went.
type Direction uint8

const (
	In  Direction = iota // read from the peer
	Out                  // written to the peer
)

func (d Direction) String() string {
	if d == In {
		return "in"
	}
	return "out"
}

// ProblemKind classifies input the connection skipped.
type ProblemKind uint8

const (
	ProblemOversize        ProblemKind = iota + 1 // line longer than MaxLineBytes
	ProblemGarbage                                // line is not JSON
	ProblemInvalid                                // JSON, but not a JSON-RPC message
	ProblemUnknownResponse                        // response to no pending Call (including ones cancelled or timed out)
)

func (k ProblemKind) String() string {
	switch k {
	case ProblemOversize:
		return "oversize"
	case ProblemGarbage:
		return "garbage"
	case ProblemInvalid:
		return "invalid"
	case ProblemUnknownResponse:
		return "unknown-response"
	}
	return fmt.Sprintf("ProblemKind(%d)", uint8(k))
}

// Problem describes one skipped inbound line.
type Problem struct {
	Kind   ProblemKind
	Bytes  int64  // length of the line
	Sample string // first ~200 bytes of the line
	Err    error  // why it was skipped
}

// Options configures a Conn. The zero value is usable.
type Options struct {
	// MaxLineBytes bounds one inbound line (excluding its '\n'); default
	// 256 MiB. A longer line
	// is read and discarded up to its newline (never buffered whole),
	// reported via OnProblem, and the connection goes on.
	MaxLineBytes int64
	// Logger receives debug/warn records about skipped input; default:
	// discard.
	Logger *slog.Logger
	// OnProblem, if set, is called for every skipped line and unknown
	// response. It may be called from the reader and dispatch goroutines and
	// must not block or call into the Conn.
	OnProblem func(Problem)
	// Trace, if set, is called with every full line read (In) or written
	// (Out), without the newline, in wire order per direction. Oversize
	// lines are not traced. It must not retain line or call into the Conn
	// (Out is called under the write lock).
	Trace func(dir Direction, line []byte)
	// KeepOpenOnEOF makes the peer's EOF end only the reading half: once
	// everything read is dispatched, pending Calls fail and ReadDone is
	// closed, but writes go on until Close. An agent uses it to finish
	// sending what belongs to a turn after its client closed stdin.
	KeepOpenOnEOF bool
	// MaxInflight and MaxInflightBytes bound the peer's requests being
	// served at once and the bytes of what was read but not yet handled
	// (default 256 and 256 MiB). Past either, the reader stops reading until
	// something finishes, so a peer that pipelines without end waits on its
	// own output instead of growing tai. A single message larger than the
	// byte bound is still read when nothing else is held.
	MaxInflight      int
	MaxInflightBytes int64
}

// Stats are cumulative counters of a Conn.
type Stats struct {
	LinesIn          int64 // non-blank lines read, including skipped ones but not oversize ones
	LinesOut         int64 // messages written
	Garbage          int64 // non-JSON lines
	Oversize         int64 // lines over MaxLineBytes
	Invalid          int64 // JSON lines that are not JSON-RPC messages
	UnknownResponses int64 // responses matching no pending Call
}

// Conn is one JSON-RPC connection over a pair of NDJSON streams. All methods
// are safe for concurrent use.
type Conn struct {
	r       io.Reader
	w       io.Writer
	h       Handler
	lender  Borrower // h, if it borrows
	arriver Arriver  // h, if it is told of requests as they come
	opts    Options
	log     *slog.Logger
	nextID  atomic.Int64
	wlock   chan struct{} // write mutex; a channel so waiting honours ctx
	ctx     context.Context
	cancel  context.CancelCauseFunc
	done    chan struct{}
	rdone   chan struct{} // closed when reading has ended and all read was dispatched
	q       queue
	readErr error // set by the reader before q.finish

	mu       sync.Mutex
	closed   bool
	wclosed  bool // CloseWrite was called: reading goes on, writing fails
	cause    error
	pending  map[int64]chan *envelope  // our calls awaiting a response
	inflight map[wireID][]*inflightReq // peer's requests being served
	served   sync.WaitGroup            // HandleRequest goroutines

	// work hands a request to an idle server goroutine (see server);
	// idleServers counts those waiting on it.
	work        chan func()
	idleServers atomic.Int32

	linesIn, linesOut, garbage, oversize, invalid, unknown atomic.Int64

	// held counts what was read and not yet handled: requests until their
	// reply is written, other messages until dispatched.
	heldMu    sync.Mutex
	heldCond  *sync.Cond
	heldReqs  int
	heldBytes int64
}

type inflightReq struct {
	cancel context.CancelFunc
}

// NewConn starts a connection reading from r and writing to w, serving the
// peer with h (nil answers every request with -32601 and ignores
// notifications). It starts a reader and a dispatcher goroutine; they end
// when r reports EOF or an error, or on Close.
func NewConn(r io.Reader, w io.Writer, h Handler, opts Options) *Conn {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = defaultMaxLineBytes
	}
	if opts.MaxInflight <= 0 {
		opts.MaxInflight = defaultMaxInflight
	}
	if opts.MaxInflightBytes <= 0 {
		opts.MaxInflightBytes = defaultMaxInflightBytes
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Conn{
		r:        r,
		w:        w,
		h:        h,
		lender:   borrower(h),
		arriver:  arriver(h),
		opts:     opts,
		log:      log,
		wlock:    make(chan struct{}, 1),
		work:     make(chan func()),
		done:     make(chan struct{}),
		rdone:    make(chan struct{}),
		pending:  make(map[int64]chan *envelope),
		inflight: make(map[wireID][]*inflightReq),
	}
	c.q.wake = make(chan struct{}, 1)
	c.heldCond = sync.NewCond(&c.heldMu)
	c.ctx, c.cancel = context.WithCancelCause(context.Background())
	go c.readLoop()
	go c.dispatchLoop()
	return c
}

// Call sends a request and waits for its response, decoding the result into
// result (which may be nil; a null result leaves it untouched).
//
// If the peer answers with an error, Call returns it as *Error. If ctx is
// done first, Call sends $/cancel_request, forgets the request and returns
// an error wrapping ctx.Err(). If the connection ends first, the error wraps
// a *ClosedError carrying the cause.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("jsonrpc: call %s: %w", method, err)
	}
	id := c.nextID.Add(1) - 1 // first id is 0, like most agents use
	ch := make(chan *envelope, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("jsonrpc: call %s: %w", method, c.closedErr())
	}
	c.pending[id] = ch
	c.mu.Unlock()

	if err := c.write(ctx, &outRequest{JSONRPC: "2.0", ID: &id, Method: method, Params: params}); err != nil {
		c.forget(id)
		return fmt.Errorf("jsonrpc: call %s: %w", method, err)
	}

	var resp *envelope
	select {
	case resp = <-ch:
	case <-ctx.Done():
		c.forget(id)
		select {
		case resp = <-ch: // answered meanwhile: prefer the answer
		default:
			go c.sendCancel(id)
			return fmt.Errorf("jsonrpc: call %s (id %d): %w", method, id, ctx.Err())
		}
	case <-c.done:
		select {
		case resp = <-ch:
		default:
			return fmt.Errorf("jsonrpc: call %s: %w", method, c.closedErr())
		}
	case <-c.rdone:
		select {
		case resp = <-ch:
		default:
			c.forget(id)
			return fmt.Errorf("jsonrpc: call %s: %w", method, &ClosedError{Cause: c.readErr})
		}
	}
	if resp.rpcErr != nil {
		return resp.rpcErr
	}
	if result != nil && !isNull(resp.Result) {
		if err := json.Unmarshal(resp.Result, result); err != nil {
			return fmt.Errorf("jsonrpc: call %s: decode result: %w", method, err)
		}
	}
	return nil
}

// Notify sends a notification. It returns once the line is written; ctx
// bounds only the wait for the write lock, since a started Write cannot be
// abandoned without corrupting the stream (Close unblocks it by closing w).
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	if pw, ok := params.(ParamsWriter); ok {
		if buf := notifyLine(method, pw); buf != nil {
			defer putBuf(buf)
			if err := c.writeLine(ctx, buf.Bytes()); err != nil {
				return fmt.Errorf("jsonrpc: notify %s: %w", method, err)
			}
			return nil
		}
	}
	if err := c.write(ctx, &outRequest{JSONRPC: "2.0", Method: method, Params: params}); err != nil {
		return fmt.Errorf("jsonrpc: notify %s: %w", method, err)
	}
	return nil
}

// Close ends the connection: every pending Call fails at once with a
// *ClosedError carrying cause, handler contexts are cancelled, queued inbound
// messages are dropped, and r and w are closed if they implement io.Closer
// (which unblocks the reader goroutine). An explicit cause wins over any
// later EOF. Close is idempotent; only the first call can return an error
// (from closing r or w).
func (c *Conn) Close(cause error) error {
	return c.shutdown(cause)
}

// Wait blocks until every HandleRequest the Conn started has returned and
// been answered: after Close, no handler of the Conn's is left running.
func (c *Conn) Wait() { c.served.Wait() }

// ErrWriteClosed is returned by writes after [Conn.CloseWrite].
var ErrWriteClosed = errors.New("jsonrpc: output closed")

// CloseWrite closes the outbound stream (if it is an io.Closer), telling the
// peer no more messages are coming, and keeps reading: what the peer still
// sends is dispatched until it closes its side. Later writes fail with
// ErrWriteClosed without ending the connection.
func (c *Conn) CloseWrite() error {
	select {
	case c.wlock <- struct{}{}:
	case <-c.done:
		return nil
	}
	defer func() { <-c.wlock }()
	c.mu.Lock()
	already := c.wclosed
	c.wclosed = true
	c.mu.Unlock()
	if wc, ok := c.w.(io.Closer); ok && !already {
		if err := wc.Close(); err != nil {
			return fmt.Errorf("jsonrpc: close writer: %w", err)
		}
	}
	return nil
}

// ReadDone is closed once the peer's stream has ended (or the connection
// was closed) and everything read from it has been dispatched.
func (c *Conn) ReadDone() <-chan struct{} { return c.rdone }

// Done is closed when the connection has ended: the peer's stream ended and
// everything already queued was dispatched, or Close was called, or a write
// failed.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended (nil while it is open): the cause
// given to Close (ErrClosed if none), ErrPeerClosed on EOF, or the read or
// write error.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		return nil
	}
	if c.cause == nil {
		return ErrClosed
	}
	return c.cause
}

// Stats returns a snapshot of the connection's counters.
func (c *Conn) Stats() Stats {
	return Stats{
		LinesIn:          c.linesIn.Load(),
		LinesOut:         c.linesOut.Load(),
		Garbage:          c.garbage.Load(),
		Oversize:         c.oversize.Load(),
		Invalid:          c.invalid.Load(),
		UnknownResponses: c.unknown.Load(),
	}
}

func (c *Conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &ClosedError{Cause: c.cause}
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// shutdown ends the connection once; the first cause wins.
func (c *Conn) shutdown(cause error) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.cause = cause
	wclosed := c.wclosed
	clear(c.pending) // waiting Calls observe done
	c.mu.Unlock()

	c.cancel(&ClosedError{Cause: cause})
	close(c.done)
	c.heldMu.Lock()
	c.heldCond.Broadcast() // a reader waiting in hold sees done
	c.heldMu.Unlock()
	return c.closeStreams(wclosed)
}

func (c *Conn) closeStreams(wclosed bool) error {
	var errs []error
	wc, wok := c.w.(io.Closer)
	if wok && !wclosed {
		if err := wc.Close(); err != nil {
			errs = append(errs, fmt.Errorf("jsonrpc: close writer: %w", err))
		}
	}
	if rc, ok := c.r.(io.Closer); ok {
		// Avoid closing a ReadWriteCloser twice (comparing interfaces holding
		// uncomparable types would panic).
		same := wok && reflect.TypeOf(rc).Comparable() && reflect.TypeOf(wc).Comparable() && rc == wc
		if !same {
			if err := rc.Close(); err != nil {
				errs = append(errs, fmt.Errorf("jsonrpc: close reader: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// write encodes v and writes it as one line.
func (c *Conn) write(ctx context.Context, v any) error {
	buf, err := encodeLine(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	defer putBuf(buf)
	return c.writeLine(ctx, buf.Bytes())
}

// writeLine writes one encoded line (ending in '\n') with a single Write
// under the write lock. A write error ends the connection with that cause.
func (c *Conn) writeLine(ctx context.Context, line []byte) error {
	select {
	case <-c.done:
		return c.closedErr()
	default:
	}
	select {
	case c.wlock <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.closedErr()
	}
	c.mu.Lock()
	wclosed := c.wclosed
	c.mu.Unlock()
	if wclosed {
		<-c.wlock
		return ErrWriteClosed
	}
	_, err := c.w.Write(line)
	if err == nil {
		c.linesOut.Add(1)
		if c.opts.Trace != nil {
			c.opts.Trace(Out, line[:len(line)-1])
		}
	}
	<-c.wlock
	if err != nil {
		c.shutdown(fmt.Errorf("jsonrpc: write: %w", err))
		return c.closedErr()
	}
	return nil
}

func (c *Conn) sendCancel(id int64) {
	err := c.write(context.Background(), &outRequest{
		JSONRPC: "2.0",
		Method:  CancelRequestMethod,
		Params:  map[string]int64{"requestId": id},
	})
	if err != nil {
		c.log.Debug("jsonrpc: send cancel", "id", id, "err", err)
	}
}

// StreamingResult is a result that writes its own JSON straight to the
// connection, so that a large one (a file's text) is never encoded in
// memory whole. Release is called once, when the reply has been written or
// dropped.
type StreamingResult interface {
	WriteJSON(w *bufio.Writer) error
	Release()
}

// A ResultWriter is a result that writes its own JSON into the reply's
// buffer: compact, valid, and byte for byte what encoding/json would
// write for it (with SetEscapeHTML(false)). A small reply sent often (a
// permission's answer) then costs no reflection. WriteResult reports false
// for a value it does not write that way, and the reply encodes it with
// encoding/json instead, whatever it wrote discarded.
type ResultWriter interface {
	WriteResult(buf *bytes.Buffer) bool
}

// A ParamsWriter is a notification's params that write their own JSON,
// as a ResultWriter does a result: a notification sent by the thousand (a
// session update) then costs no reflection. WriteParams reports false
// for a value it does not write that way.
type ParamsWriter interface {
	WriteParams(buf *bytes.Buffer) bool
}

// notifyLine is the line of a notification whose params write themselves
// (a pooled buffer), or nil when they decline.
func notifyLine(method string, pw ParamsWriter) *bytes.Buffer {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	buf.WriteString(`{"jsonrpc":"2.0","method":`)
	_ = jsonw.String(buf, method)
	buf.WriteString(`,"params":`)
	if !pw.WriteParams(buf) {
		putBuf(buf)
		return nil
	}
	buf.WriteString("}\n")
	return buf
}

// replyStreaming writes a StreamingResult's reply under the write lock.
// With a Trace hook the line is built in memory instead, to be traced.
func (c *Conn) replyStreaming(id ID, sr StreamingResult) error {
	defer sr.Release()
	if c.opts.Trace != nil {
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		if err := c.writeStreamed(bw, id, sr); err != nil {
			return err
		}
		return c.writeLine(context.Background(), buf.Bytes())
	}
	select {
	case c.wlock <- struct{}{}:
	case <-c.done:
		return c.closedErr()
	}
	c.mu.Lock()
	wclosed := c.wclosed
	c.mu.Unlock()
	if wclosed {
		<-c.wlock
		return ErrWriteClosed
	}
	err := c.writeStreamed(bufio.NewWriterSize(c.w, readBufSize), id, sr)
	if err == nil {
		c.linesOut.Add(1)
	}
	<-c.wlock
	if err != nil {
		c.shutdown(fmt.Errorf("jsonrpc: write: %w", err))
		return c.closedErr()
	}
	return nil
}

func (c *Conn) writeStreamed(w *bufio.Writer, id ID, sr StreamingResult) error {
	writeResultHead(w, id)
	if err := sr.WriteJSON(w); err != nil {
		return err
	}
	_, _ = w.WriteString("}\n")
	return w.Flush()
}

// reply sends the response to one of the peer's requests. After close it is
// dropped silently.
func (c *Conn) reply(ctx context.Context, id ID, result any, err error) {
	if sr, ok := result.(StreamingResult); ok {
		if err == nil {
			if werr := c.replyStreaming(id, sr); werr != nil && !errors.Is(werr, ErrClosed) {
				c.log.Warn("jsonrpc: reply", "id", id.String(), "err", werr)
			}
			return
		}
		sr.Release()
		result = nil
	}
	if rw, ok := result.(ResultWriter); ok && err == nil {
		buf := bufPool.Get().(*bytes.Buffer)
		buf.Reset()
		writeResultHead(buf, id)
		if rw.WriteResult(buf) {
			buf.WriteString("}\n")
			c.sendReply(id, buf)
			return
		}
		putBuf(buf)
	}
	var msg any
	if err == nil {
		msg = &outResult{JSONRPC: "2.0", ID: id, Result: result}
	} else {
		msg = &outError{JSONRPC: "2.0", ID: id, Error: toError(ctx, err)}
	}
	buf, encErr := encodeLine(msg)
	if encErr != nil {
		// The result could not be encoded; the peer still needs an answer.
		buf, encErr = encodeLine(&outError{JSONRPC: "2.0", ID: id, Error: &Error{
			Code: CodeInternalError, Message: "encode result: " + encErr.Error(),
		}})
		if encErr != nil { // only if err's Data is broken
			buf, _ = encodeLine(&outError{JSONRPC: "2.0", ID: id, Error: &Error{
				Code: CodeInternalError, Message: "encode error: " + encErr.Error(),
			}})
		}
	}
	c.sendReply(id, buf)
}

// sendReply writes a reply's line and returns its buffer to the pool.
func (c *Conn) sendReply(id ID, buf *bytes.Buffer) {
	defer putBuf(buf)
	if werr := c.writeLine(context.Background(), buf.Bytes()); werr != nil && !errors.Is(werr, ErrClosed) {
		c.log.Warn("jsonrpc: reply", "id", id.String(), "err", werr)
	}
}

// writeResultHead writes a result reply up to its result's value, as
// encoding/json writes outResult.
func writeResultHead(w io.StringWriter, id ID) {
	_, _ = w.WriteString(`{"jsonrpc":"2.0","id":`)
	if id.raw == "" {
		_, _ = w.WriteString("null")
	} else {
		_, _ = w.WriteString(id.raw)
	}
	_, _ = w.WriteString(`,"result":`)
}

func toError(ctx context.Context, err error) *Error {
	var rpcErr *Error
	switch {
	case errors.As(err, &rpcErr):
		return rpcErr
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return &Error{Code: CodeRequestCancelled, Message: "request cancelled"}
	default:
		return &Error{Code: CodeInternalError, Message: err.Error()}
	}
}

// readLoop is the single reader: it parses lines and queues messages in
// wire order. It never blocks on the dispatcher.
func (c *Conn) readLoop() {
	lr := lines.New(c.r, readBufSize, c.opts.MaxLineBytes)
	for {
		line, skipped, sample, err := lr.Next()
		if skipped > 0 {
			c.oversize.Add(1)
			c.problem(Problem{Kind: ProblemOversize, Bytes: skipped, Sample: sample,
				Err: fmt.Errorf("line of %d bytes exceeds MaxLineBytes %d", skipped, c.opts.MaxLineBytes)})
		}
		if line != nil {
			c.handleLine(lr, line)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				c.readErr = ErrPeerClosed
			} else {
				c.readErr = fmt.Errorf("jsonrpc: read: %w", err)
			}
			c.q.finish()
			return
		}
	}
}

// handleLine decodes one line and dispatches or queues it; line is only
// valid during the call, so what is queued refers to a detached copy (a
// long line's own buffer, handed over, never copied).
func (c *Conn) handleLine(lr *lines.Reader, line []byte) {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	msg := bytes.TrimSpace(line)
	if len(msg) == 0 {
		return // blank lines are harmless
	}
	select {
	case <-c.done:
		return // closed but r is still being drained: queue nothing
	default:
	}
	c.linesIn.Add(1)
	if c.opts.Trace != nil {
		c.opts.Trace(In, line)
	}
	if msg[0] != '{' {
		switch {
		case !json.Valid(msg):
			c.skipGarbage(msg, errors.New("not JSON"))
		case msg[0] == '[':
			c.skipInvalid(msg, errors.New("batches are not supported"))
		default:
			c.skipInvalid(msg, errors.New("not a JSON object"))
		}
		return
	}
	env := envelopes.Get().(*envelope)
	*env = envelope{}
	if err := parseEnvelope(msg, env); err != nil {
		c.skipGarbage(msg, err)
		return
	}
	switch {
	case env.Method.present:
		if env.Method.name == "" {
			c.skipInvalid(msg, errors.New(`"method" is not a non-empty string`))
			if env.ID.present() && env.ID.valid() {
				go c.reply(c.ctx, ID{raw: string(env.ID)}, nil,
					&Error{Code: CodeInvalidRequest, Message: "invalid request: method must be a non-empty string"})
			}
			return
		}
		if !env.ID.present() {
			env.kind = kindNotification
			break
		}
		if !env.ID.valid() {
			c.skipInvalid(msg, errors.New(`request "id" is not a number or a string`))
			return
		}
		env.kind = kindRequest
	case !isNull(env.Error) || env.Result != nil:
		if !env.ID.valid() || env.ID == "null" {
			c.skipInvalid(msg, errors.New(`response without a usable "id"`))
			return
		}
		env.kind = kindResponse
		if !isNull(env.Error) {
			env.rpcErr = new(Error)
			if err := json.Unmarshal(env.Error, env.rpcErr); err != nil {
				env.rpcErr = &Error{Code: CodeInternalError, Message: "malformed error object", Data: env.Error}
			}
		}
	default:
		c.skipInvalid(msg, errors.New(`neither "method" nor "result"/"error"`))
		return
	}
	env.size = int64(len(msg))
	// The common case of a stream of updates: the dispatcher has nothing
	// queued or in hand, so a message is dispatched here, in wire order all
	// the same, with no hand-off (a wake-up and a context switch per line
	// on a flood, and on a request, which an agent waits on, one more
	// wake-up before its handler's goroutine starts).
	inline := c.q.idle()
	// What outlives this call refers to a copy of the line (a long line's
	// own buffer, handed over), unless the handler borrows it.
	if !inline || env.kind != kindNotification || c.lender == nil || env.Method.name == CancelRequestMethod ||
		!c.lender.Borrows(env.Method.name, len(msg)) {
		off := cap(line) - cap(msg) // msg is line trimmed
		env.rebase(msg, lr.Detach(line)[off:off+len(msg)])
	}
	if inline && env.kind == kindRequest {
		c.hold(env) // within the in-flight bounds, as queued ones are
		select {
		case <-c.done:
			c.unhold(env)
			return
		default:
		}
		c.dispatch(env) // serve: the handler's own goroutine
		return
	}
	if inline {
		c.dispatch(env)
		if env.kind == kindNotification {
			*env = envelope{}
			envelopes.Put(env)
		}
		return
	}
	c.hold(env)
	c.q.push(env)
}

// arriver returns h as an Arriver, or nil.
func arriver(h Handler) Arriver {
	a, _ := h.(Arriver)
	return a
}

// borrower returns h as a Borrower, or nil.
func borrower(h Handler) Borrower {
	b, _ := h.(Borrower)
	return b
}

// rebase points env's raw members, slices of msg, at the same bytes of
// owned, msg's copy.
func (env *envelope) rebase(msg, owned []byte) {
	for _, f := range []*json.RawMessage{&env.Params, &env.Result, &env.Error} {
		if *f != nil {
			off := cap(msg) - cap(*f)
			*f = owned[off : off+len(*f)]
		}
	}
}

// envelopes recycles the envelopes of notifications, which come by the
// thousand in a flood.
var envelopes = sync.Pool{New: func() any { return new(envelope) }}

// hold waits, on the reader, until env fits the in-flight bounds, and
// counts it.
func (c *Conn) hold(env *envelope) {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	// A response never waits: it completes a Call, which may be what a
	// held request is waiting for.
	for env.kind != kindResponse && c.heldBytes > 0 && (c.heldBytes+env.size > c.opts.MaxInflightBytes ||
		env.kind == kindRequest && c.heldReqs >= c.opts.MaxInflight) {
		select {
		case <-c.done:
			return // closing: the reader must not block
		default:
		}
		c.heldCond.Wait()
	}
	c.heldBytes += env.size
	if env.kind == kindRequest {
		c.heldReqs++
	}
}

// unhold releases what hold counted for env.
func (c *Conn) unhold(env *envelope) {
	c.heldMu.Lock()
	c.heldBytes -= env.size
	if env.kind == kindRequest {
		c.heldReqs--
	}
	c.heldMu.Unlock()
	c.heldCond.Broadcast()
}

func (c *Conn) skipGarbage(line []byte, err error) {
	c.garbage.Add(1)
	c.problem(Problem{Kind: ProblemGarbage, Bytes: int64(len(line)), Sample: lines.Sample(line, nil), Err: err})
}

func (c *Conn) skipInvalid(line []byte, err error) {
	c.invalid.Add(1)
	c.problem(Problem{Kind: ProblemInvalid, Bytes: int64(len(line)), Sample: lines.Sample(line, nil), Err: err})
}

func (c *Conn) problem(p Problem) {
	level := slog.LevelWarn
	if p.Kind == ProblemGarbage || p.Kind == ProblemUnknownResponse {
		level = slog.LevelDebug // agents routinely log to stdout and answer late
	}
	c.log.Log(c.ctx, level, "jsonrpc: skipped input", "kind", p.Kind.String(), "bytes", p.Bytes, "sample", p.Sample, "err", p.Err)
	if c.opts.OnProblem != nil {
		c.opts.OnProblem(p)
	}
}

// dispatchLoop is the single dispatcher: it pops messages in wire order.
// Once the reader is finished and the queue drained, it ends the connection
// with the reader's cause (unless Close got there first).
func (c *Conn) dispatchLoop() {
	defer close(c.rdone)
	var spare []*envelope
	for {
		batch, finished := c.q.take(spare)
		if len(batch) == 0 {
			spare = batch
			if finished {
				if !c.opts.KeepOpenOnEOF || !errors.Is(c.readErr, ErrPeerClosed) {
					c.shutdown(c.readErr)
				}
				return
			}
			select {
			case <-c.q.wake:
				continue
			case <-c.done:
				return
			}
		}
		for i, env := range batch {
			select {
			case <-c.done:
				return // closed: drop the rest
			default:
			}
			c.dispatch(env)
			if env.kind != kindRequest {
				c.unhold(env)
			}
			if env.kind == kindNotification {
				// Handled and not referred to again (a response goes on
				// to its Call, a request to its goroutine). Cleared, so the
				// pool does not pin its line.
				*env = envelope{}
				envelopes.Put(env)
			}
			batch[i] = nil // let params be collected
		}
		spare = batch[:0]
	}
}

func (c *Conn) dispatch(env *envelope) {
	switch env.kind {
	case kindNotification:
		if env.Method.name == CancelRequestMethod {
			c.cancelInbound(env.Params)
			return
		}
		if c.h != nil {
			c.h.HandleNotification(c.ctx, env.Method.name, env.Params)
		}
	case kindRequest:
		c.serve(env)
	case kindResponse:
		id := ID{raw: string(env.ID)}
		var ch chan *envelope
		if n, ok := id.int64Value(); ok {
			c.mu.Lock()
			ch = c.pending[n]
			delete(c.pending, n)
			c.mu.Unlock()
		}
		if ch == nil {
			c.unknown.Add(1)
			c.problem(Problem{Kind: ProblemUnknownResponse, Sample: "id " + id.String(),
				Err: fmt.Errorf("response id %s matches no pending call", id)})
			return
		}
		ch <- env // buffered and used once: never blocks
	}
}

// serve runs HandleRequest on its own goroutine, registering the request
// first so that a $/cancel_request later on the wire finds it.
func (c *Conn) serve(env *envelope) {
	id := ID{raw: string(env.ID)}
	if c.arriver != nil {
		c.arriver.Arrived(env.Method.name, id)
	}
	ctx, cancel := context.WithCancel(context.WithValue(c.ctx, requestIDKey{}, id))
	req := &inflightReq{cancel: cancel}
	c.mu.Lock()
	c.inflight[env.ID] = append(c.inflight[env.ID], req)
	c.served.Add(1)
	c.mu.Unlock()
	job := func() {
		defer c.served.Done()
		defer c.unhold(env)
		defer c.finishInflight(env.ID, req)
		var result any
		var err error
		if c.h == nil {
			err = ErrMethodNotFound(env.Method.name)
		} else {
			result, err = c.h.HandleRequest(ctx, env.Method.name, env.Params)
		}
		c.reply(ctx, id, result, err)
	}
	select {
	case c.work <- job: // an idle server took it
	default:
		go c.server(job)
	}
}

// maxIdleServers is how many server goroutines wait for the next request
// once theirs is answered.
const maxIdleServers = 4

// server runs a request, then waits for the next one while fewer than
// maxIdleServers wait, until the connection ends. A request runs on a
// goroutine, so that one waiting (on a person, say) never stops the
// reading; a reused goroutine has the stack an earlier request grew,
// where a new one would grow its stack from the minimum, copying it each
// time, for every permission request of a flood.
func (c *Conn) server(job func()) {
	for {
		job()
		if c.idleServers.Add(1) > maxIdleServers {
			c.idleServers.Add(-1)
			return
		}
		select {
		case job = <-c.work:
			c.idleServers.Add(-1)
		case <-c.done:
			c.idleServers.Add(-1)
			return
		}
	}
}

func (c *Conn) finishInflight(key wireID, req *inflightReq) {
	req.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	reqs := c.inflight[key]
	for i, r := range reqs {
		if r == req {
			reqs = append(reqs[:i], reqs[i+1:]...)
			break
		}
	}
	if len(reqs) == 0 {
		delete(c.inflight, key)
	} else {
		c.inflight[key] = reqs
	}
}

// cancelInbound cancels the peer's in-flight request(s) with the given id.
// A buggy peer may reuse an id concurrently; all of them are cancelled.
func (c *Conn) cancelInbound(params json.RawMessage) {
	var p cancelParams
	if err := json.Unmarshal(params, &p); err != nil || !p.RequestID.valid() {
		c.log.Debug("jsonrpc: malformed $/cancel_request", "params", lines.Sample(params, nil))
		return
	}
	c.mu.Lock()
	reqs := c.inflight[p.RequestID]
	c.mu.Unlock()
	for _, r := range reqs {
		r.cancel()
	}
}

// queue is the unbounded, ordered hand-off from reader to dispatcher. It
// never drops and never blocks the reader.
type queue struct {
	mu       sync.Mutex
	items    []*envelope
	finished bool
	// busy: the dispatcher holds a batch it took; it is cleared by the
	// take that finds the queue empty.
	busy bool
	wake chan struct{} // capacity 1: a pending wake-up is never lost
}

// idle reports whether the reader may dispatch the next message itself:
// nothing is queued and the dispatcher holds nothing, so every earlier
// message has been handled. Only the reader queues, so nothing can get
// ahead of what it then dispatches.
func (q *queue) idle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return !q.busy && len(q.items) == 0 && !q.finished
}

func (q *queue) push(env *envelope) {
	q.mu.Lock()
	wasEmpty := len(q.items) == 0
	q.items = append(q.items, env)
	q.mu.Unlock()
	// The dispatcher only waits after taking an empty queue, so waking it on
	// the empty→non-empty transition is enough.
	if wasEmpty {
		q.signal()
	}
}

func (q *queue) finish() {
	q.mu.Lock()
	q.finished = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take swaps out everything queued, handing back spare for reuse. The
// dispatcher is busy until a take finds nothing.
func (q *queue) take(spare []*envelope) (batch []*envelope, finished bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	batch, q.items = q.items, spare[:0]
	q.busy = len(batch) > 0
	return batch, q.finished
}
