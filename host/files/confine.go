// Package files is tai's host file service: the protocol-agnostic
// implementation behind agent requests such as ACP fs/read_text_file and
// fs/write_text_file.
//
// Every path is confined to a set of workspace roots. A path is accepted
// only if it is absolute, lexically inside a root after filepath.Clean, and
// still inside a (symlink-resolved) root once every symlink along it has been
// resolved. I/O is then performed through an os.Root opened on the real root
// that contains the resolved path, so a symlink swapped in between the check
// and the I/O cannot make the operation escape the workspace.
package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNotAbsolute is returned (wrapped) for relative or empty paths.
var ErrNotAbsolute = errors.New("path must be absolute")

// ErrNUL is returned (wrapped) for a path holding a NUL byte: no file has
// such a name, and cleaning one lexically (nul\x00/../x) would name a
// file the agent did not spell.
var ErrNUL = errors.New("path contains a NUL byte")

// ProtectedError reports a write refused because the path is, or is under,
// one of the paths the service protects (tai's own files, the agents'
// config files that name commands).
type ProtectedError struct {
	Path      string // path as requested
	Protected string // the protected file or directory it hits
}

func (e *ProtectedError) Error() string {
	if e.Path == e.Protected {
		return fmt.Sprintf("path %q is read-only to agents (tai's own files, agents' config files that name commands); agents may not write it", e.Path)
	}
	return fmt.Sprintf("path %q is inside %s, which is read-only to agents (tai's own files, agents' config files that name commands); agents may not write there", e.Path, e.Protected)
}

// SecretError reports a path refused because it is, or resolves to, one
// of the secret paths the service hides (keys and tokens, the policy's
// read denies): the same ones the sandbox hides from the agent's own
// system calls, so that tai serves none of them either.
type SecretError struct {
	Path   string // path as requested
	Secret string // the secret file or directory it hits
}

func (e *SecretError) Error() string {
	if e.Path == e.Secret {
		return fmt.Sprintf("path %q is a secret path; agents may not read or write it", e.Path)
	}
	return fmt.Sprintf("path %q is inside %s, a secret path; agents may not read or write there", e.Path, e.Secret)
}

// OutsideError reports a path refused because it is, or resolves to,
// somewhere outside the workspace roots. Callers branch on it with errors.As.
type OutsideError struct {
	Path   string   // path as requested
	Roots  []string // real workspace roots
	Reason string   // human-readable reason, e.g. `is outside the workspace`
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("path %q %s (%s)", e.Path, e.Reason, strings.Join(e.Roots, ", "))
}

// maxSymlinks bounds symlink resolution, like the kernel's ELOOP limit.
const maxSymlinks = 255

// roots holds both spellings of every root: the cleaned path as configured
// (for the lexical check, so a root given through a symlink still accepts
// paths spelled through that symlink) and its real path.
type roots struct {
	lexical []string
	real    []string
}

func newRoots(paths []string) (roots, error) {
	if len(paths) == 0 {
		return roots{}, errors.New("files: at least one workspace root is required")
	}
	var r roots
	for _, p := range paths {
		if !filepath.IsAbs(p) {
			return roots{}, fmt.Errorf("files: workspace root %q: %w", p, ErrNotAbsolute)
		}
		clean := filepath.Clean(p)
		real, err := filepath.EvalSymlinks(clean)
		if err != nil {
			return roots{}, fmt.Errorf("files: workspace root: %w", err)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return roots{}, fmt.Errorf("files: workspace root: %w", err)
		}
		if !fi.IsDir() {
			return roots{}, fmt.Errorf("files: workspace root %q is not a directory", p)
		}
		r.lexical = append(r.lexical, clean, real)
		r.real = append(r.real, real)
	}
	return r, nil
}

// resolve applies the confinement rules to path and returns its real path.
func (r roots) resolve(path string) (string, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("%q: %w", path, ErrNUL)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%q: %w", path, ErrNotAbsolute)
	}
	clean := filepath.Clean(path)
	if _, ok := within(r.lexical, clean); !ok {
		return "", &OutsideError{Path: path, Roots: slices.Clone(r.real), Reason: "is outside the workspace"}
	}
	real, err := resolveSymlinks(clean)
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", path, err)
	}
	if _, ok := within(r.real, real); !ok {
		return "", &OutsideError{
			Path:   path,
			Roots:  slices.Clone(r.real),
			Reason: fmt.Sprintf("resolves through a symlink to %q outside the workspace", real),
		}
	}
	return real, nil
}

// within reports the longest root containing p (both clean and absolute).
// It compares whole path components, so /tmp/ws does not contain /tmp/ws2.
func within(rootList []string, p string) (string, bool) {
	best, found := "", false
	for _, root := range rootList {
		prefix := root
		if !strings.HasSuffix(prefix, string(filepath.Separator)) {
			prefix += string(filepath.Separator)
		}
		if (p == root || strings.HasPrefix(p, prefix)) && len(root) >= len(best) {
			best, found = root, true
		}
	}
	return best, found
}

// resolveSymlinks is filepath.EvalSymlinks that tolerates missing trailing
// components (a file about to be written, and its parents, may not exist
// yet) and follows dangling symlinks lexically, so a link to a not-yet
// existing file outside the workspace is still seen as outside.
func resolveSymlinks(path string) (string, error) {
	resolved := string(filepath.Separator)
	rest := splitPath(path)
	links := 0
	for len(rest) > 0 {
		comp := rest[0]
		rest = rest[1:]
		if comp == ".." {
			// resolved never contains symlinks, so its parent is lexical.
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, comp)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing entry exists, so no more symlinks.
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("too many levels of symbolic links at %q", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			resolved = string(filepath.Separator)
		}
		// Splice the raw target in front; its ".." components are applied
		// after resolving what precedes them, as the kernel does.
		rest = append(splitPath(target), rest...)
	}
	return resolved, nil
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, string(filepath.Separator)) {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}
