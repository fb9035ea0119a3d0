// Package audit writes and checks tai's audit log: an append-only,
// hash-chained JSONL file, one per run, recording every decision tai makes
// with its provenance (run and session lifecycle, prompts, permission
// requests and decisions, file writes, terminal commands, mode changes,
// process starts and exits, errors, budget and fleet events).
//
// # Format
//
// Each line is one [Entry]. Entry.Prev is the SHA-256 of the previous line
// and Entry.Hash the SHA-256 of the line itself without its hash member; see
// [Entry] for the exact definition. [Verify] recomputes both.
//
// # Durability
//
// When [Log.Append] returns nil, the entry has been handed to the kernel with
// write(2): it is in the page cache and survives the tai process being
// killed, including by SIGKILL, but not a kernel crash or power loss. A
// background goroutine then fsyncs the file (group commit): an fsync starts
// as soon as an entry is written, but no sooner than Options.SyncInterval
// after the previous one, so an entry is on stable storage and survives power
// loss within roughly SyncInterval plus one fsync latency of Append
// returning. [Log.Sync] and [Log.Close] fsync synchronously. Append never
// waits for an fsync (except with SyncEvery).
//
// A failed write or fsync (e.g. ENOSPC on a full disk) is returned to the
// caller and is sticky: every later Append, Sync and Close returns it,
// because after a failed write the file may end in a partial line and after
// a failed fsync the kernel may have dropped dirty pages.
//
// # Tamper evidence
//
// [Verify] detects, and names the first bad line for: an edited entry (hash
// mismatch); an edited entry whose hash was recomputed (the next line's prev
// no longer matches); deleted, duplicated or reordered entries (seq and prev
// checks); a partial last line (crash mid-write or truncation inside a
// line); blank or non-JSON lines.
//
// It cannot detect, from the file alone: removal of trailing whole entries
// (the shorter file is a valid chain — Report.Ended is false if the final
// run.end entry is gone, and Report.Head/LastSeq can be compared with an
// anchor recorded elsewhere, e.g. [Log.Head] at run end); or an attacker who
// rewrites the whole chain from the edited entry onwards. The hash chain is
// integrity evidence, not a signature.
//
// # Resume
//
// [Open] on an existing file verifies it and continues the chain. If the only
// problem is a partial last line (a crash mid-write), Open fails with a
// *CorruptError whose Report.Partial is set, unless Options.TruncatePartial
// is true, in which case the partial bytes are cut off, a KindError entry
// recording the repair is appended, and the log continues. Complete entries
// are never removed. Any other problem fails Open: tai never appends to a
// broken chain.
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
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tai-dev/tai/internal/statedir"
	"github.com/tai-dev/tai/redact"
)

// SyncMode selects how a Log fsyncs.
type SyncMode int

const (
	// SyncGroup fsyncs in the background, batching entries (default).
	SyncGroup SyncMode = iota
	// SyncEvery fsyncs inside every Append. Slow; a baseline for benchmarks
	// and for callers that need power-loss durability before returning.
	SyncEvery
	// SyncNone never fsyncs in the background; only Sync and Close do.
	SyncNone
)

// DefaultSyncInterval is the default group-commit window: the minimum time
// between background fsyncs, and so the bound on how long an entry can sit
// only in the page cache (plus one fsync). Short enough to be invisible to a
// human watching a run, long enough to batch bursts (a parallel fleet can
// append thousands of entries per second) into one fsync.
const DefaultSyncInterval = 10 * time.Millisecond

// Options configures Open.
type Options struct {
	// Run is stamped on every entry (Entry.Run).
	Run string
	// Redactor redacts every entry's data. nil means redact.Default().
	Redactor *redact.Redactor
	// Clock returns entry timestamps. nil means time.Now.
	Clock func() time.Time
	// SyncInterval is the group-commit window; <= 0 means DefaultSyncInterval.
	SyncInterval time.Duration
	// SyncMode selects the fsync strategy; the zero value is SyncGroup.
	SyncMode SyncMode
	// TruncatePartial lets Open repair a file whose last line is partial
	// (left by a crash mid-write) by truncating it; see the package doc.
	TruncatePartial bool
	// Logger receives warnings (fsync failures, repairs). nil means
	// slog.Default().
	Logger *slog.Logger
}

var (
	// ErrClosed is returned by Append and Sync after Close.
	ErrClosed = errors.New("audit: log closed")
	// ErrLocked is returned by Open when another Log (in this or another
	// process) has the file open.
	ErrLocked = errors.New("audit: log file in use")
	// ErrTooLarge is returned by Append for an entry over MaxLineSize.
	ErrTooLarge = errors.New("audit: entry too large")
)

// CorruptError is returned by Open for an existing file that does not
// verify. Report.Partial distinguishes a crash-truncated last line (which
// Options.TruncatePartial repairs) from tampering or corruption.
type CorruptError struct {
	Path   string
	Report Report
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("audit: %s: %s", e.Path, e.Report.Problem)
}

// deviceFile is a character device: it has no stable storage to fsync to.
type deviceFile struct{ *os.File }

func (deviceFile) Sync() error { return nil }

// file is what Log writes to; an interface so tests can inject failures.
type file interface {
	io.Writer
	Sync() error
	Close() error
}

// Log is an open audit log. It is safe for concurrent use; entries appear in
// the file in Seq order.
type Log struct {
	path     string
	run      string
	red      *redact.Redactor
	clock    func() time.Time
	mode     SyncMode
	interval time.Duration
	logger   *slog.Logger

	mu        sync.Mutex // guards everything below, and the file offset
	f         file
	seq       uint64 // last written
	prev      string // hex SHA-256 of the last written line
	synced    uint64 // last seq known to be fsynced
	err       error  // sticky write/fsync error
	closed    bool
	buf       []byte
	closeErr  error
	closeOnce sync.Once

	syncMu sync.Mutex    // serializes fsyncs so synced advances monotonically
	kick   chan struct{} // cap 1: "there is something to fsync"
	stop   chan struct{}
	done   chan struct{} // closed when the sync goroutine exits
}

// DefaultPath returns $XDG_STATE_HOME/tai/audit/<runID>.jsonl, falling back
// to ~/.local/state when XDG_STATE_HOME is unset or relative (as the XDG spec
// requires), and to the temp dir if there is no home directory. Path
// separators in runID are replaced so it cannot escape the directory.
func DefaultPath(runID string) string {
	name := strings.NewReplacer("/", "_", `\`, "_").Replace(runID)
	if name == "" || name == "." || name == ".." {
		name = "_" + name
	}
	return statedir.Dir("audit", name+".jsonl")
}

// Open opens the log at path, creating it (mode 0600, parent directories
// 0700) if needed. An existing file is verified and its chain continued; see
// the package doc for how a damaged file is handled.
func Open(path string, opts Options) (*Log, error) {
	l := &Log{
		path:     path,
		run:      opts.Run,
		red:      opts.Redactor,
		clock:    opts.Clock,
		mode:     opts.SyncMode,
		interval: opts.SyncInterval,
		logger:   opts.Logger,
		prev:     GenesisPrev,
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if l.red == nil {
		l.red = redact.Default()
	}
	if l.clock == nil {
		l.clock = time.Now
	}
	if l.interval <= 0 {
		l.interval = DefaultSyncInterval
	}
	if l.logger == nil {
		l.logger = slog.Default()
	}

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit: create directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: stat: %w", err)
	}
	if st.Mode()&fs.ModeCharDevice != 0 {
		// A character device (a pipe to a collector, /dev/full in tests)
		// is written as is: nothing to verify, lock, chmod or fsync.
		l.f = deviceFile{f}
		ok = true
		close(l.done)
		return l, nil
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("audit: %s: not a regular file", path)
	}
	if err := lockFile(f); err != nil {
		return nil, fmt.Errorf("audit: %s: %w", path, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		// The log holds prompts and commands; keep it private even if it
		// was created by something else.
		if err := f.Chmod(0o600); err != nil {
			return nil, fmt.Errorf("audit: chmod: %w", err)
		}
	}

	var repaired *Report
	if st.Size() == 0 {
		// Make the new directory entry durable too.
		if err := syncDir(dir); err != nil {
			return nil, err
		}
	} else {
		v := newVerifier()
		if err := v.run(bufio.NewReaderSize(f, 64<<10)); err != nil {
			return nil, fmt.Errorf("audit: read %s: %w", path, err)
		}
		rep := v.report()
		switch {
		case rep.OK:
		case rep.Partial && opts.TruncatePartial && v.unterminated:
			// The last entry is complete and only lacks its newline: keep it.
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return nil, fmt.Errorf("audit: repair last line: %w", err)
			}
			l.logger.Warn("audit: added missing newline after last entry", "path", path, "line", rep.FirstBad)
			repaired = &rep
			repaired.Problem += " (newline added)"
		case rep.Partial && opts.TruncatePartial:
			if err := f.Truncate(v.goodOffset); err != nil {
				return nil, fmt.Errorf("audit: truncate partial line: %w", err)
			}
			l.logger.Warn("audit: truncated partial last line", "path", path,
				"line", rep.FirstBad, "offset", v.goodOffset, "bytes", st.Size()-v.goodOffset)
			repaired = &rep
			repaired.Problem += fmt.Sprintf(" (%d bytes at offset %d removed)", st.Size()-v.goodOffset, v.goodOffset)
		default:
			return nil, &CorruptError{Path: path, Report: rep}
		}
		if repaired != nil {
			if err := f.Sync(); err != nil {
				return nil, fmt.Errorf("audit: fsync: %w", err)
			}
		}
		l.seq, l.prev, l.synced = v.seq, v.prev, v.seq
	}
	l.f = f
	ok = true
	if l.mode == SyncGroup {
		go l.syncLoop()
	} else {
		close(l.done)
	}
	if repaired != nil {
		data := map[string]any{"error": "repaired audit log on open", "problem": repaired.Problem, "line": repaired.FirstBad}
		if err := l.Append(KindError, "", data); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// Path returns the log's file path.
func (l *Log) Path() string { return l.path }

// Redactor is what redacts the log's entries (a live feed serves its
// frames redacted alike).
func (l *Log) Redactor() *redact.Redactor { return l.red }

// Head returns the seq and line hash of the last entry written, for anchoring
// the chain outside the file (see Report.Head).
func (l *Log) Head() (seq uint64, hash string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.prev
}

// Append adds an entry. data is encoded with encoding/json (a
// json.RawMessage is used as is) and redacted; nil means no data. Append
// returns once the line is written to the kernel (see the package doc); it
// returns a write error, the sticky error of an earlier failure, ErrTooLarge
// or ErrClosed.
func (l *Log) Append(kind, session string, data any) error {
	return l.AppendTask(kind, session, "", data)
}

// AppendTask is Append for an entry of a fleet task's session: the entry
// names the task, so that a fleet's log, which holds every task's sessions,
// can be read task by task.
func (l *Log) AppendTask(kind, session, task string, data any) error {
	raw, err := l.encodeData(data)
	if err != nil {
		return err
	}
	if len(raw)+len(kind)+len(session)+len(task)+len(l.run)+512 > MaxLineSize {
		return fmt.Errorf("%w: %d bytes", ErrTooLarge, len(raw))
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.err != nil {
		return l.err
	}
	seq := l.seq + 1
	// Timestamp under the lock so ts never decreases in file order (unless
	// the wall clock steps back).
	buf := appendBody(l.buf[:0], seq, l.clock(), kind, l.run, session, task, raw, l.prev)
	sum := sha256.Sum256(append(buf, '}'))
	buf = append(buf, `,"hash":"`...)
	buf = hex.AppendEncode(buf, sum[:])
	buf = append(buf, `"}`...)
	line := sha256.Sum256(buf)
	buf = append(buf, '\n')
	l.buf = buf
	if len(l.buf) > 1<<20 {
		l.buf = nil // don't pin a huge buffer after one big entry
	}

	// One write(2) per entry: the entry is in the page cache, or not.
	if _, err := l.f.Write(buf); err != nil {
		l.err = fmt.Errorf("audit: write %s (seq %d): %w", l.path, seq, err)
		l.logger.Error("audit: write failed; log is now read-only", "path", l.path, "err", err)
		return l.err
	}
	l.seq = seq
	l.prev = hex.EncodeToString(line[:])
	switch l.mode {
	case SyncGroup:
		select {
		case l.kick <- struct{}{}:
		default: // a sync is already pending and will cover this entry
		}
	case SyncEvery:
		if err := l.f.Sync(); err != nil {
			l.err = fmt.Errorf("audit: fsync %s: %w", l.path, err)
			return l.err
		}
		l.synced = seq
	}
	return nil
}

// encodeData turns Append's data into compact, redacted JSON.
func (l *Log) encodeData(data any) ([]byte, error) {
	var raw []byte
	switch d := data.(type) {
	case nil:
		return nil, nil
	case appender:
		b, err := d.appendJSON(make([]byte, 0, 256))
		if err != nil {
			return nil, fmt.Errorf("audit: encode data: %w", err)
		}
		raw = b
	case json.RawMessage:
		if len(d) == 0 {
			return nil, nil
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, d); err != nil {
			return nil, fmt.Errorf("audit: data: %w", err)
		}
		raw = buf.Bytes()
	default:
		b, err := json.Marshal(data)
		if err != nil {
			return nil, fmt.Errorf("audit: encode data: %w", err)
		}
		raw = b
	}
	if len(raw) > MaxLineSize-1024 {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(raw)) // before the costly redaction
	}
	// Bytes applies the same key, name/value and pattern rules as
	// Redactor.JSON, but skips decoding when nothing looks secret.
	out := l.red.Bytes(raw)
	if len(out) != len(raw) || (len(out) > 0 && &out[0] != &raw[0]) {
		// Defensive: a line must stay one line of valid JSON.
		if !json.Valid(out) {
			return nil, errors.New("audit: redaction produced invalid JSON")
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, out); err != nil {
			return nil, fmt.Errorf("audit: data: %w", err)
		}
		out = buf.Bytes()
	}
	return out, nil
}

// syncLoop is the group-commit goroutine.
func (l *Log) syncLoop() {
	defer close(l.done)
	var last time.Time
	for {
		select {
		case <-l.kick:
		case <-l.stop:
			return // Close does the final fsync
		}
		if wait := l.interval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.stop:
				t.Stop()
				return
			}
		}
		last = time.Now()
		_ = l.fsync() // error is sticky and logged
	}
}

// fsync syncs the file if anything was written since the last fsync.
func (l *Log) fsync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	target, f, err := l.seq, l.f, l.err
	done := l.synced >= target
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if done {
		return nil
	}
	// Not under mu: Appends continue while the disk works.
	if err := f.Sync(); err != nil {
		l.mu.Lock()
		if l.err == nil {
			l.err = fmt.Errorf("audit: fsync %s: %w", l.path, err)
		}
		err = l.err
		l.mu.Unlock()
		l.logger.Error("audit: fsync failed; log is now read-only", "path", l.path, "err", err)
		return err
	}
	l.mu.Lock()
	l.synced = target
	l.mu.Unlock()
	return nil
}

// Sync fsyncs everything appended so far. Call it at run end or before
// reporting an entry as durable.
func (l *Log) Sync() error {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return l.fsync()
}

// Close stops the background goroutine, fsyncs and closes the file. It
// returns the sticky error, if any. It is idempotent: later calls return
// the first call's result.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		if l.mode == SyncGroup {
			close(l.stop)
		}
		<-l.done
		err := l.fsync()
		if cerr := l.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("audit: close: %w", cerr)
		}
		l.closeErr = err
	})
	return l.closeErr
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit: open directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit: fsync directory: %w", err)
	}
	return nil
}
