package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Report is the result of Verify.
type Report struct {
	// Entries is the number of entries that verified, all before FirstBad
	// (plus, when Partial, a complete last entry that only lacks its
	// newline).
	Entries int
	// OK is true if every line verified and the file ends with a newline.
	OK bool
	// FirstBad is the 1-based line number of the first problem, or 0.
	FirstBad int
	// Problem describes it, e.g. "line 7: hash mismatch (entry edited)".
	Problem string
	// Partial is true if the only problem is an unterminated last line: the
	// signature of a crash or kill in the middle of a write. All complete
	// entries before it verified.
	Partial bool
	// LastSeq and Head are the seq and line hash (the next entry's prev) of
	// the last verified entry. Compare them with an anchor recorded outside
	// the file to detect deletion of trailing entries.
	LastSeq uint64
	Head    string
	// Ended is true if the last verified entry is a run.end entry.
	Ended bool
	// Started is true if a run.start entry verified: a log tai wrote has
	// one (an empty file verifies, with Entries 0, but records no run).
	Started bool
}

// Verify reads a log and checks every line's hash, the prev chain and the
// seq sequence, stopping at the first problem. Tampering is reported in the
// Report; the error is only for failures reading r. Verify streams: memory
// use is bounded by the longest line (at most MaxLineSize).
func Verify(r io.Reader) (Report, error) {
	v := newVerifier()
	err := v.run(bufio.NewReaderSize(r, 64<<10))
	return v.report(), err
}

type verifier struct {
	line       int    // lines consumed
	entries    int    // entries verified
	seq        uint64 // seq of the last verified entry
	prev       string // hash of the last verified line
	lastKind   string
	started    bool  // a run.start entry verified
	goodOffset int64 // byte offset just past the last verified, terminated line
	bad        int
	problem    string
	partial    bool
	// unterminated is set when the last line lacks only its newline.
	unterminated bool
	buf          []byte
}

func newVerifier() *verifier { return &verifier{prev: GenesisPrev} }

func (v *verifier) run(br *bufio.Reader) error {
	for {
		b, term, tooLong, err := readLine(br, &v.buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if len(b) == 0 && !term && !tooLong {
			return nil // clean EOF
		}
		v.line++
		if tooLong {
			// Not read to its end: a log of tai's never has one, and
			// /dev/zero has no end.
			v.fail(fmt.Sprintf("line longer than %d bytes", MaxLineSize))
			return nil
		}
		if !term {
			v.partial = true
			if v.check(b) == "" {
				v.unterminated = true
				v.fail("last line lacks its newline (entry itself verifies; write interrupted)")
			} else {
				v.fail("partial last line (truncated write)")
			}
			return nil
		}
		if p := v.check(b); p != "" {
			v.fail(p)
			return nil
		}
		v.goodOffset += int64(len(b)) + 1
	}
}

func (v *verifier) fail(problem string) {
	v.bad = v.line
	v.problem = fmt.Sprintf("line %d: %s", v.line, problem)
}

// check verifies one line and, if it is good, advances the chain. It returns
// a description of the problem, or "".
func (v *verifier) check(b []byte) string {
	if len(b) == 0 {
		return "empty line"
	}
	n := len(b) - hashMember
	if n < 1 || b[0] != '{' || !bytes.Equal(b[n:n+9], []byte(`,"hash":"`)) || !bytes.Equal(b[len(b)-2:], []byte(`"}`)) {
		return "malformed entry (does not end with a hash member)"
	}
	h := sha256.New()
	h.Write(b[:n])
	h.Write([]byte{'}'})
	var sum [sha256.Size]byte
	var want [2 * sha256.Size]byte
	hex.Encode(want[:], h.Sum(sum[:0]))
	if !bytes.Equal(want[:], b[n+9:len(b)-2]) {
		return "hash mismatch (entry edited)"
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return fmt.Sprintf("invalid entry: %v", err)
	}
	switch {
	case e.Seq > v.seq+1:
		return fmt.Sprintf("seq %d, want %d (entry deleted, or entries reordered)", e.Seq, v.seq+1)
	case e.Seq < v.seq+1:
		return fmt.Sprintf("seq %d, want %d (entries reordered or duplicated)", e.Seq, v.seq+1)
	case e.Prev != v.prev && v.line == 1:
		return "prev is not the genesis value (entries before it deleted)"
	case e.Prev != v.prev:
		return fmt.Sprintf("prev does not match line %d (that entry was rewritten, or this one replaced)", v.line-1)
	case e.Kind == "":
		return "missing kind"
	}
	lh := sha256.Sum256(b)
	v.seq, v.prev, v.lastKind = e.Seq, hex.EncodeToString(lh[:]), e.Kind
	v.started = v.started || e.Kind == KindRunStart
	v.entries++
	return ""
}

func (v *verifier) report() Report {
	r := Report{
		Entries:  v.entries,
		OK:       v.bad == 0,
		FirstBad: v.bad,
		Problem:  v.problem,
		Partial:  v.partial,
		LastSeq:  v.seq,
		Ended:    v.lastKind == KindRunEnd,
		Started:  v.started,
	}
	if v.entries > 0 {
		r.Head = v.prev
	}
	return r
}

// readLine reads one line into *buf (reused) and returns it without the
// newline. term reports whether the newline was present. Reading stops at a
// line longer than MaxLineSize (tooLong), which is neither returned nor read
// to its end. err is io.EOF at the end of input, possibly along with an
// unterminated last line.
func readLine(br *bufio.Reader, buf *[]byte) (line []byte, term, tooLong bool, err error) {
	*buf = (*buf)[:0]
	for {
		frag, err := br.ReadSlice('\n')
		if len(*buf)+len(frag) > MaxLineSize+1 {
			*buf = (*buf)[:0]
			return nil, false, true, nil
		}
		*buf = append(*buf, frag...)
		switch {
		case err == nil:
			b := *buf
			return b[:len(b)-1], true, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return *buf, false, false, err
		}
	}
}

// Read calls fn for every line of the log that decodes as an entry, with its
// 1-based line number. It does not verify hashes and skips lines it cannot
// decode (including a partial last line), so it works on damaged logs; use
// Verify to check integrity. An error from fn stops Read and is returned.
func Read(r io.Reader, fn func(line int, e Entry) error) error {
	return scan(r, false, func(line int, _ []byte, e *Entry) error { return fn(line, *e) })
}

// BadLineError is a line of a file that is not an audit entry.
type BadLineError struct {
	Line    int
	Problem string
}

func (e *BadLineError) Error() string {
	return fmt.Sprintf("line %d: %s", e.Line, e.Problem)
}

// scan reads the log line by line, each line at most MaxLineSize. strict:
// a complete line that is not an entry, an over-long line and a file with
// no entries are *BadLineError (a partial last line, the mark of a crash in
// mid-write, is still skipped); otherwise they are skipped.
func scan(r io.Reader, strict bool, fn func(line int, raw []byte, e *Entry) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	entries := 0
	for line := 1; ; line++ {
		b, term, tooLong, err := readLine(br, &buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("audit: read line %d: %w", line, err)
		}
		if tooLong {
			if strict {
				return &BadLineError{line, fmt.Sprintf("longer than %d bytes: not an audit log", MaxLineSize)}
			}
			return nil
		}
		var e Entry
		switch {
		case len(b) > 0 && json.Unmarshal(b, &e) == nil && e.Kind != "":
			entries++
			if ferr := fn(line, b, &e); ferr != nil {
				return ferr
			}
		case strict && term:
			return &BadLineError{line, "not an audit entry: " + strconv.Quote(excerpt(b))}
		}
		if !term {
			if strict && entries == 0 {
				if len(b) > 0 {
					return &BadLineError{line, "not an audit entry: " + strconv.Quote(excerpt(b))}
				}
				return &BadLineError{line, "no entries (the file is empty)"}
			}
			return nil
		}
	}
}

// excerpt is the start of a bad line, for the error.
func excerpt(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}
