package files

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Service reads and writes files confined to a set of workspace roots.
// It is safe for concurrent use.
type Service struct {
	roots roots
	// protected are paths no write may touch, hidden paths none may
	// touch, each as given (clean) and with its symlinks resolved; set
	// once, before use.
	protected []string
	hidden    []string
}

// New returns a Service confined to roots, which must be absolute paths of
// existing directories. Symlinks in the roots are resolved once, here.
func New(roots ...string) (*Service, error) {
	r, err := newRoots(roots)
	if err != nil {
		return nil, err
	}
	return &Service{roots: r}, nil
}

// Protect makes the service refuse writes to each path (a file or a whole
// directory) with a *ProtectedError, even inside the workspace. Call it
// before the service is used. Relative and empty paths are ignored.
func (s *Service) Protect(paths ...string) { s.protected = appendSpellings(s.protected, paths) }

// Hide makes the service refuse every call on each path (a file or a whole
// directory), read or write, with a *SecretError, even inside the
// workspace and through a symlink. Call it before the service is used.
// Relative and empty paths are ignored.
func (s *Service) Hide(paths ...string) { s.hidden = appendSpellings(s.hidden, paths) }

// appendSpellings adds each absolute path to list, clean and with its
// symlinks resolved.
func appendSpellings(list, paths []string) []string {
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		clean := filepath.Clean(p)
		list = append(list, clean)
		if real, err := resolveSymlinks(clean); err == nil && real != clean {
			list = append(list, real)
		}
	}
	return list
}

// CheckWrite is the check Write makes before writing: path is confined to
// the workspace and is none of the protected paths. It returns the real
// path.
func (s *Service) CheckWrite(path string) (string, error) {
	real, err := s.resolve(path)
	if err != nil {
		return "", err
	}
	return real, s.protects(path, real)
}

// resolve confines path to the workspace, away from the hidden paths, and
// returns its real path.
func (s *Service) resolve(path string) (string, error) {
	real, err := s.roots.resolve(path)
	if err != nil {
		return "", err
	}
	if err := s.hides(path, filepath.Clean(path), real); err != nil {
		return "", err
	}
	return real, nil
}

// hides refuses path when any of its spellings is, or is below, a hidden
// path.
func (s *Service) hides(path string, spellings ...string) error {
	for _, h := range s.hidden {
		for _, sp := range spellings {
			if _, ok := within([]string{h}, sp); ok {
				return &SecretError{Path: path, Secret: h}
			}
		}
	}
	return nil
}

// hidesOpen refuses an opened file that is a hidden one after all: a
// symlink swapped in between resolve and the open could lead there, inside
// the workspace. The kernel says where the file really is.
func (s *Service) hidesOpen(path string, f *os.File) error {
	if len(s.hidden) == 0 {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var at string
	var rerr error
	_ = rc.Control(func(fd uintptr) { at, rerr = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd))) })
	if rerr != nil || at == "" {
		return nil // no /proc: resolve's check stands
	}
	return s.hides(path, at)
}

// protects refuses a write to path (real: its resolved path) that hits a
// protected path, by either spelling.
func (s *Service) protects(path, real string) error {
	clean := filepath.Clean(path)
	for _, p := range s.protected {
		if _, ok := within([]string{p}, real); ok {
			return &ProtectedError{Path: path, Protected: p}
		}
		if _, ok := within([]string{p}, clean); ok {
			return &ProtectedError{Path: path, Protected: p}
		}
	}
	return nil
}

// Roots returns the real (symlink-resolved) workspace roots.
func (s *Service) Roots() []string {
	return append([]string(nil), s.roots.real...)
}

// Resolve checks that path is confined to the workspace and returns its real
// path. It fails with an error wrapping ErrNotAbsolute for relative paths,
// with an *OutsideError for paths that are, or resolve to, outside every
// root, and with a *SecretError for the hidden ones. The path itself (and
// its parents) need not exist.
func (s *Service) Resolve(path string) (string, error) {
	return s.resolve(path)
}

// Contains applies the same confinement rules as Service.Resolve against
// roots (absolute directories, resolved on every call) and returns the real
// path. It is for callers that confine paths without doing file I/O, such as
// a terminal's working directory.
func Contains(roots []string, path string) (string, error) {
	r, err := newRoots(roots)
	if err != nil {
		return "", err
	}
	return r.resolve(path)
}

// open resolves path and opens an os.Root on the real root containing it,
// returning the path relative to that root.
func (s *Service) open(path string) (root *os.Root, real, rel string, err error) {
	real, err = s.resolve(path)
	if err != nil {
		return nil, "", "", err
	}
	base, _ := within(s.roots.real, real) // resolve guarantees a match
	rel, err = filepath.Rel(base, real)
	if err != nil {
		return nil, "", "", err
	}
	root, err = os.OpenRoot(base)
	if err != nil {
		return nil, "", "", fmt.Errorf("open workspace root: %w", err)
	}
	return root, real, rel, nil
}

// Read returns the text of the file at path. line is the 1-based first line
// to return (0 or 1 = from the start) and limit the maximum number of lines
// (0 = all). Lines keep their original endings ("\n", "\r\n", or none on the
// last line). Reading past the end of the file returns "" without error. A
// missing file yields an error wrapping fs.ErrNotExist.
func (s *Service) Read(ctx context.Context, path string, line, limit int) (string, error) {
	if line < 0 || limit < 0 {
		return "", fmt.Errorf("read %q: line and limit must not be negative", path)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	root, _, rel, err := s.open(path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	// O_NONBLOCK so a FIFO cannot block the open; it is refused below.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("read %q: %w", path, err)
	}
	defer f.Close()
	if err := s.hidesOpen(path, f); err != nil {
		return "", err
	}
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read %q: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("read %q: not a regular file", path)
	}
	var b strings.Builder
	if line <= 1 && limit == 0 && fi.Size() > 0 {
		// The whole file: one allocation of its size, not a doubling
		// builder's garbage.
		b.Grow(int(min(fi.Size()+1, maxPrealloc)))
	}
	if err := readLines(ctx, &b, f, line, limit); err != nil {
		return "", fmt.Errorf("read %q: %w", path, err)
	}
	return b.String(), nil
}

// maxPrealloc bounds the buffer reserved from a file's size: a size that
// lies (a growing file, a special file) costs no more than this up front.
const maxPrealloc = 1 << 30

// ctxCheckEvery is how many bytes are read between context checks.
const ctxCheckEvery = 1 << 20

// readLines copies lines [line, line+limit) of r to w, streaming so that
// files of any size (and lines of any length) work.
func readLines(ctx context.Context, w *strings.Builder, r io.Reader, line, limit int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if line <= 1 && limit == 0 {
		_, err := io.Copy(w, ctxReader{ctx, br})
		return err
	}
	// Skip line-1 lines without keeping them.
	for n := 1; n < line; {
		_, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			n++
			if n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		case errors.Is(err, bufio.ErrBufferFull):
			if err := ctx.Err(); err != nil {
				return err
			}
		case err == io.EOF:
			return nil // line is past the end of the file
		default:
			return err
		}
	}
	for n, read := 0, 0; limit == 0 || n < limit; {
		chunk, err := br.ReadSlice('\n')
		w.Write(chunk)
		if read += len(chunk); read >= ctxCheckEvery {
			read = 0
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch {
		case err == nil:
			n++
		case errors.Is(err, bufio.ErrBufferFull):
			// Long line: keep appending until its newline.
		case err == io.EOF:
			return nil
		default:
			return err
		}
	}
	return nil
}

// ctxReader stops a long copy when the context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// WriteResult describes a completed Write.
type WriteResult struct {
	Path       string // real path written
	Size       int64
	Created    bool   // the file did not exist before
	HashBefore string // "sha256:<hex>" of the previous content; "" if Created
	HashAfter  string // "sha256:<hex>" of content
}

// Write replaces the file at path with content. Missing parent directories
// are created (0755). The write is atomic: content goes to a temporary file
// in the same directory, which is fsynced and renamed over the target, so
// readers see either the old or the new file, never a partial one. An
// existing file keeps its permission bits; a new file is created 0644
// (subject to the umask). Writing through a symlink that stays inside the
// workspace updates the link's target and keeps the link.
func (s *Service) Write(ctx context.Context, path string, content []byte) (WriteResult, error) {
	if err := ctx.Err(); err != nil {
		return WriteResult{}, err
	}
	root, real, rel, err := s.open(path)
	if err != nil {
		return WriteResult{}, err
	}
	defer root.Close()
	if err := s.protects(path, real); err != nil {
		return WriteResult{}, err
	}
	if rel == "." {
		return WriteResult{}, fmt.Errorf("write %q: is a directory", path)
	}
	wrap := func(err error) error { return fmt.Errorf("write %q: %w", path, err) }

	dir := filepath.Dir(rel)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return WriteResult{}, wrap(err)
		}
	}

	res := WriteResult{Path: real, Size: int64(len(content))}
	var mode fs.FileMode = 0o644
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Created = true
	case err != nil:
		return WriteResult{}, wrap(err)
	case !fi.Mode().IsRegular():
		// Includes a symlink that appeared after Resolve.
		return WriteResult{}, wrap(fmt.Errorf("not a regular file (%s)", fi.Mode().Type()))
	default:
		mode = fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		if res.HashBefore, err = hashFile(ctx, root, rel); err != nil {
			return WriteResult{}, wrap(err)
		}
	}

	sum := sha256.Sum256(content)
	res.HashAfter = "sha256:" + hex.EncodeToString(sum[:])

	tmp, err := writeTemp(root, rel, content, mode, !res.Created)
	if err != nil {
		return WriteResult{}, wrap(err)
	}
	if err := ctx.Err(); err != nil {
		root.Remove(tmp)
		return WriteResult{}, err
	}
	if err := root.Rename(tmp, rel); err != nil {
		root.Remove(tmp)
		return WriteResult{}, wrap(err)
	}
	// Persist the rename. Best effort: the new content is already in
	// place, so failing the write here would misreport it.
	if d, err := root.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return res, nil
}

// Observe describes a regular file the agent wrote by other means (its own
// tools): its real path, size and hash, confined like Read and Write. A
// path outside the workspace fails with an *OutsideError.
func (s *Service) Observe(ctx context.Context, path string) (WriteResult, error) {
	if err := ctx.Err(); err != nil {
		return WriteResult{}, err
	}
	root, real, rel, err := s.open(path)
	if err != nil {
		return WriteResult{}, err
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	if err != nil {
		return WriteResult{}, fmt.Errorf("observe %q: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return WriteResult{}, fmt.Errorf("observe %q: not a regular file (%s)", path, fi.Mode().Type())
	}
	res := WriteResult{Path: real, Size: fi.Size()}
	if res.HashAfter, err = hashFile(ctx, root, rel); err != nil {
		return WriteResult{}, fmt.Errorf("observe %q: %w", path, err)
	}
	return res, nil
}

// writeTemp writes content to a new temporary file next to rel and returns
// its name relative to root. os.Root has no CreateTemp, hence O_EXCL with a
// random name.
func writeTemp(root *os.Root, rel string, content []byte, mode fs.FileMode, chmod bool) (string, error) {
	var f *os.File
	var tmp string
	for range 10 {
		tmp = filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".tai-"+rand.Text()[:12]+".tmp")
		var err error
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode.Perm())
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		f = nil
	}
	if f == nil {
		return "", errors.New("could not create a temporary file")
	}
	err := func() error {
		// The umask may have cleared bits of an existing file's mode.
		if chmod {
			if err := f.Chmod(mode); err != nil {
				return err
			}
		}
		if _, err := f.Write(content); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		root.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

func hashFile(ctx context.Context, root *os.Root, rel string) (string, error) {
	f, err := root.Open(rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
