package a2a

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// OversizeError: an SSE line or event was over the limit and was skipped.
// The reader stays usable.
type OversizeError struct {
	Size  int64 // bytes skipped (at least)
	Limit int64
}

func (e *OversizeError) Error() string {
	return fmt.Sprintf("a2a: skipped a %d-byte SSE event (over the %d-byte limit)", e.Size, e.Limit)
}

// sseReader reads the data of server-sent events. It follows the
// EventSource rules A2A servers rely on: `data:` lines of one event are
// joined with "\n"; `id:`, `event:`, `retry:`, unknown fields and `:`
// comments are ignored; an event ends at a blank line; an event cut off by
// the end of the stream is dropped. No line or event may exceed max bytes:
// the rest of it is skipped, not buffered.
type sseReader struct {
	r   *bufio.Reader
	max int64

	data     bytes.Buffer
	hasData  bool
	skipping bool  // the current event went over max
	skipped  int64 // bytes of it
}

func newSSEReader(r io.Reader, max int64) *sseReader {
	if max <= 0 {
		max = defaultMaxFrame
	}
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next event's data. It returns an *OversizeError for an
// event it skipped (call Next again), io.EOF at the end of the stream, and
// the transport's error if the connection broke.
func (s *sseReader) Next() ([]byte, error) {
	for {
		line, over, err := s.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				// A last event without its blank line was cut off.
				s.reset()
			}
			return nil, err
		}
		if over > 0 {
			// An oversize comment or other field costs nothing; oversize
			// data loses its event.
			if bytes.HasPrefix(line, []byte("data")) {
				s.skipping = true
				s.skipped += over
			}
			continue
		}
		if len(line) == 0 { // dispatch
			if s.skipping {
				n := s.skipped
				s.reset()
				return nil, &OversizeError{Size: n, Limit: s.max}
			}
			if !s.hasData {
				continue
			}
			out := bytes.Clone(s.data.Bytes())
			s.reset()
			return out, nil
		}
		if s.skipping || line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue // id, event, retry and the unknown
		}
		if int64(s.data.Len()+len(value)+1) > s.max {
			s.skipping = true
			s.skipped = int64(s.data.Len() + len(value))
			s.data.Reset()
			continue
		}
		if s.hasData {
			s.data.WriteByte('\n')
		}
		s.data.Write(value)
		s.hasData = true
	}
}

func (s *sseReader) reset() {
	s.data.Reset()
	s.hasData, s.skipping, s.skipped = false, false, 0
}

// readLine reads one line without its line ending. A line over max is
// consumed and reported as over (its length) instead, with its first
// bytes as line.
func (s *sseReader) readLine() (line []byte, over int64, err error) {
	var buf, head []byte
	var n int64
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(head) < 5 {
			head = append(head, chunk[:min(len(chunk), 5-len(head))]...)
		}
		n += int64(len(chunk))
		if n <= s.max+2 { // +2: the line ending is not content
			buf = append(buf, chunk...)
		} else {
			buf = nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			// A last line without its newline cannot end an event: it
			// goes with the cut-off event.
			return nil, 0, err
		}
		break
	}
	if buf == nil {
		return head, n, nil
	}
	buf = bytes.TrimSuffix(buf, []byte("\n"))
	buf = bytes.TrimSuffix(buf, []byte("\r"))
	if int64(len(buf)) > s.max {
		return head, int64(len(buf)), nil
	}
	return buf, 0, nil
}
