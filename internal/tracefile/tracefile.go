// Package tracefile writes tai's raw wire transcript (--trace FILE): one
// JSON record per line the agent and tai exchanged, secrets redacted.
//
// Redaction happens on the writer's own goroutine, off the turn's path: the
// hook only copies the line and queues it. Streamed text is redacted as the
// text it is, not line by line: the chunks of one message are held, with
// the lines that come between them, until another message starts, their
// texts joined and redacted together, so a token streamed four characters
// at a time is caught like a whole one, even with another update in the
// middle.
package tracefile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	schema "github.com/tai-dev/tai/protocol/acp"
	"github.com/tai-dev/tai/redact"
)

const (
	// maxPending bounds the bytes queued for the writer; the hook waits
	// beyond it, so a slow disk slows the agent instead of growing tai.
	maxPending = 64 << 20
	// maxHeld bounds the text of one message held for joint redaction
	// (and the lines held with it); maxHeldLines the lines.
	maxHeld      = 1 << 20
	maxHeldLines = 4096
)

// Writer is an open trace file.
type Writer struct {
	f   *os.File
	out *bufio.Writer
	red *redact.Redactor

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []record
	pending int64
	closed  bool
	done    chan struct{}

	held    []chunkRec // chunks of one message awaiting joint redaction
	heldKey string
	heldLen int
}

type record struct {
	ts   time.Time
	dir  string
	line []byte
}

type chunkRec struct {
	record
	text  string
	other bool // not a chunk of the held message: written as it is
}

// Open creates (truncates) path, private to the user, and starts the
// writer. red redacts every record (nil: redact.Default()).
func Open(path string, red *redact.Redactor) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	if red == nil {
		red = redact.Default()
	}
	w := &Writer{f: f, out: bufio.NewWriterSize(f, 64<<10), red: red, done: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.loop()
	return w, nil
}

// Line records one line sent (dir "out") or received ("in"). It copies
// line and returns; it waits only when the writer is far behind.
func (w *Writer) Line(dir string, line []byte) {
	rec := record{ts: time.Now().UTC(), dir: dir, line: bytes.Clone(line)}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.pending > maxPending && !w.closed {
		w.cond.Wait()
	}
	if w.closed {
		return
	}
	w.queue = append(w.queue, rec)
	w.pending += int64(len(rec.line))
	w.cond.Broadcast()
}

// Close writes what is queued and held, and closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
	<-w.done
	err := w.out.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *Writer) loop() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closed {
			w.cond.Wait()
		}
		batch := w.queue
		w.queue = nil
		closed := w.closed
		w.mu.Unlock()
		for _, rec := range batch {
			w.add(rec)
			w.mu.Lock()
			w.pending -= int64(len(rec.line))
			w.cond.Broadcast()
			w.mu.Unlock()
		}
		if closed && len(batch) == 0 {
			w.release()
			return
		}
	}
}

// add writes rec, or holds it with the message it continues. A line that
// comes while a message is held (another update, tai's answer to a
// request) is held with it, in order: the message may go on after it, and
// a secret streamed across it must still be redacted as one.
func (w *Writer) add(rec record) {
	key, text, ok := textChunk(rec.line)
	if !ok {
		if len(w.held) == 0 {
			w.write(rec, w.red.Bytes(rec.line))
			return
		}
		w.held = append(w.held, chunkRec{record: rec, other: true})
		w.heldLen += len(rec.line)
		if w.heldLen > maxHeld || len(w.held) > maxHeldLines {
			w.release()
		}
		return
	}
	if key != w.heldKey || w.heldLen+len(text) > maxHeld {
		w.release()
	}
	w.held = append(w.held, chunkRec{record: rec, text: text})
	w.heldKey = key
	w.heldLen += len(text)
}

// release writes the held chunks, redacting their joined text: each chunk
// keeps its own text but for what falls in a secret, which the chunk the
// secret starts in shows as [REDACTED].
func (w *Writer) release() {
	held := w.held
	w.held, w.heldKey, w.heldLen = nil, "", 0
	if len(held) == 0 {
		return
	}
	var joined []byte
	for _, c := range held {
		joined = append(joined, c.text...)
	}
	spans := w.red.Spans(joined)
	off := 0
	for _, c := range held {
		if c.other {
			w.write(c.record, w.red.Bytes(c.line))
			continue
		}
		start, end := off, off+len(c.text)
		off = end
		var text []byte
		changed := false
		pos := start
		for _, sp := range spans {
			if sp[1] <= start || sp[0] >= end {
				continue
			}
			changed = true
			if sp[0] > pos {
				text = append(text, joined[pos:sp[0]]...)
			}
			if sp[0] >= start {
				text = append(text, redact.Replacement...)
			}
			pos = min(sp[1], end)
		}
		if !changed {
			w.write(c.record, w.red.Bytes(c.line))
			continue
		}
		text = append(text, joined[pos:end]...)
		w.write(c.record, w.red.Bytes(withText(c.line, string(text))))
	}
}

// write appends one record.
func (w *Writer) write(rec record, line []byte) {
	fmt.Fprintf(w.out, `{"ts":%q,"dir":%q,"line":`, rec.ts.Format(time.RFC3339Nano), rec.dir)
	if json.Valid(line) {
		_, _ = w.out.Write(line)
	} else {
		b, _ := json.Marshal(string(line))
		_, _ = w.out.Write(b)
	}
	_, _ = w.out.WriteString("}\n")
}

// textChunk reports whether line is a session/update carrying a text chunk,
// with the message it belongs to (session, kind and id) and its text.
func textChunk(line []byte) (key, text string, ok bool) {
	if !bytes.Contains(line, []byte(`"session/update"`)) || !bytes.Contains(line, []byte(`_chunk"`)) {
		return "", "", false
	}
	var env struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &env) != nil || env.Method != schema.MethodSessionUpdate {
		return "", "", false
	}
	var n schema.SessionNotification
	if schema.DecodeSessionNotification(env.Params, &n) != nil {
		return "", "", false
	}
	kind := n.Update.Kind()
	var c *schema.ContentChunk
	switch {
	case n.Update.AgentMessageChunk != nil:
		c = n.Update.AgentMessageChunk
	case n.Update.AgentThoughtChunk != nil:
		c = n.Update.AgentThoughtChunk
	case n.Update.UserMessageChunk != nil:
		c = n.Update.UserMessageChunk
	default:
		return "", "", false
	}
	if c.Content.Text == nil {
		return "", "", false
	}
	id := ""
	if c.MessageId != nil {
		id = *c.MessageId
	}
	return n.SessionId + "\x00" + kind + "\x00" + id, c.Content.Text.Text, true
}

// withText returns the chunk line with its text replaced.
func withText(line []byte, text string) []byte {
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return []byte(`"` + redact.Replacement + `"`)
	}
	params, _ := v["params"].(map[string]any)
	update, _ := params["update"].(map[string]any)
	content, _ := update["content"].(map[string]any)
	if content == nil {
		return []byte(`"` + redact.Replacement + `"`)
	}
	content["text"] = text
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return []byte(`"` + redact.Replacement + `"`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
