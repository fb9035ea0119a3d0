package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// The launch spec is what tai tells its launcher on fd 3, a Unix socket,
// with the descriptors that come with it (SCM_RIGHTS on its first byte).
// Two launchers read it: the native one (launcher.c, which runs before the
// Go runtime starts) and the Go one (launcher_linux.go, for builds without
// cgo). So it is spelt for C: NUL-terminated fields, numbers in decimal.
//
//	tai-launch/1 FLAGS RESTRICT PATH ARGC ARG... ENVC ENV... [ROC RO...]
//
// FLAGS says which descriptors came, in this order: 1 a Landlock ruleset
// (enforced with landlock_restrict_self flags RESTRICT), 2 the agent's
// cgroup directory, 4 its cgroup.kill, 8 the tasks file of its cgroup v1
// pids cgroup and of the launcher's (which it goes back to), 16 the same
// two for memory (see limitPlan: where the limits are v1 controllers, the
// agent joins those as it starts); 32, with no descriptor, starts the agent
// below an init of PID and mount namespaces of its own (pidns_linux.go);
// 64, with 32, adds the RO list: files the init binds read-only in its
// mount namespace (Config.ReadOnly).
const specMagic = "tai-launch/1"

// Spec flags: which descriptors came with the spec.
const (
	specRuleset    = 1
	specCgroupDir  = 2
	specCgroupKill = 4
	specV1Pids     = 8
	specV1Memory   = 16
	specHide       = 32
	specReadOnly   = 64
	specAllFlags   = specRuleset | specCgroupDir | specCgroupKill | specV1Pids | specV1Memory | specHide | specReadOnly
)

// maxSpec bounds what a launcher reads: a spec is an argv and an
// environment, which the kernel caps far below this at exec.
const maxSpec = 64 << 20

// launchSpec is one decoded spec. A descriptor is -1 when it did not come.
type launchSpec struct {
	Path     string
	Args     []string
	Env      []string
	Restrict uint32 // landlock_restrict_self flags
	Ruleset  int
	CgDir    int
	CgKill   int
	// Join are the tasks files of the agent's v1 pids and memory
	// cgroups, Home those of the launcher's own: "0" written there moves
	// the writing thread.
	Join, Home [2]int
	// Hide starts the agent in namespaces of its own (native launcher).
	Hide bool
	// ReadOnly are absolute paths the init (Hide) binds read-only.
	ReadOnly []string
}

// noFds is a spec's descriptors before any is set.
func noFds() launchSpec {
	return launchSpec{Ruleset: -1, CgDir: -1, CgKill: -1, Join: [2]int{-1, -1}, Home: [2]int{-1, -1}}
}

// fdSlots are a spec's descriptors, in the order they are sent, each with
// its flag; a v1 pair shares one.
func (s *launchSpec) fdSlots() []struct {
	flag int
	fd   *int
} {
	return []struct {
		flag int
		fd   *int
	}{{specRuleset, &s.Ruleset}, {specCgroupDir, &s.CgDir}, {specCgroupKill, &s.CgKill},
		{specV1Pids, &s.Join[0]}, {specV1Pids, &s.Home[0]}, {specV1Memory, &s.Join[1]}, {specV1Memory, &s.Home[1]}}
}

// errNUL is an argument or variable that exec could not pass.
var errNUL = errors.New("a NUL byte in an argument or the environment")

// encode spells s, and the descriptors to send with it, in order.
func (s launchSpec) encode() ([]byte, []int, error) {
	var flags int
	var fds []int
	for i := range 2 {
		if (s.Join[i] >= 0) != (s.Home[i] >= 0) {
			return nil, nil, errors.New("launch spec: a cgroup v1 join without its way home")
		}
	}
	for _, d := range s.fdSlots() {
		if *d.fd >= 0 {
			flags |= d.flag
			fds = append(fds, *d.fd)
		}
	}
	if s.Hide {
		flags |= specHide
	}
	if len(s.ReadOnly) > 0 {
		if !s.Hide {
			return nil, nil, errors.New("launch spec: read-only binds without a mount namespace")
		}
		flags |= specReadOnly
	}
	size := 64 + len(s.Path)
	for _, a := range s.Args {
		size += len(a) + 1
	}
	for _, e := range s.Env {
		size += len(e) + 1
	}
	b := make([]byte, 0, size)
	field := func(v string) {
		b = append(b, v...)
		b = append(b, 0)
	}
	field(specMagic)
	field(strconv.Itoa(flags))
	field(strconv.FormatUint(uint64(s.Restrict), 10))
	field(s.Path)
	field(strconv.Itoa(len(s.Args)))
	for _, a := range s.Args {
		field(a)
	}
	field(strconv.Itoa(len(s.Env)))
	for _, e := range s.Env {
		field(e)
	}
	nro := 0
	if len(s.ReadOnly) > 0 {
		nro = 1 + len(s.ReadOnly)
		field(strconv.Itoa(len(s.ReadOnly)))
		for _, p := range s.ReadOnly {
			if !filepath.IsAbs(p) {
				return nil, nil, fmt.Errorf("launch spec: read-only path %q is not absolute", p)
			}
			field(p)
		}
	}
	if s.Path == "" || len(s.Args) == 0 {
		return nil, nil, errors.New("launch spec: no command")
	}
	if bytes.Count(b, []byte{0}) != 6+len(s.Args)+len(s.Env)+nro {
		return nil, nil, fmt.Errorf("launch spec: %w", errNUL)
	}
	return b, fds, nil
}

// decodeSpec reads a spec and the descriptors that came with it. On an
// error it takes none of them: the caller closes them.
func decodeSpec(b []byte, fds []int) (launchSpec, error) {
	s := noFds()
	fail := func(format string, a ...any) (launchSpec, error) {
		return noFds(), fmt.Errorf("launch spec: "+format, a...)
	}
	if len(b) == 0 || b[len(b)-1] != 0 {
		return fail("truncated")
	}
	fields := strings.Split(string(b[:len(b)-1]), "\x00")
	next := func() (string, bool) {
		if len(fields) == 0 {
			return "", false
		}
		f := fields[0]
		fields = fields[1:]
		return f, true
	}
	num := func(max uint64) (uint64, bool) {
		f, ok := next()
		if !ok {
			return 0, false
		}
		n, err := strconv.ParseUint(f, 10, 64)
		return n, err == nil && n <= max
	}
	if m, _ := next(); m != specMagic {
		return fail("not a tai-launch/1 spec")
	}
	flags, ok := num(specAllFlags)
	if !ok {
		return fail("bad flags")
	}
	restrict, ok := num(1<<32 - 1)
	if !ok {
		return fail("bad restrict flags")
	}
	s.Restrict = uint32(restrict)
	if s.Path, ok = next(); !ok || s.Path == "" {
		return fail("no path")
	}
	list := func() ([]string, bool) {
		n, ok := num(1<<31 - 1)
		if !ok || n > uint64(len(fields)) {
			return nil, false
		}
		out := fields[:n:n]
		fields = fields[n:]
		return out, true
	}
	if s.Args, ok = list(); !ok || len(s.Args) == 0 {
		return fail("bad arguments")
	}
	if s.Env, ok = list(); !ok {
		return fail("bad environment")
	}
	if flags&specReadOnly != 0 {
		if s.ReadOnly, ok = list(); !ok || len(s.ReadOnly) == 0 || flags&specHide == 0 {
			return fail("bad read-only list")
		}
		for _, p := range s.ReadOnly {
			if !filepath.IsAbs(p) {
				return fail("read-only path %q is not absolute", p)
			}
		}
	}
	if len(fields) != 0 {
		return fail("bad environment")
	}
	want := 0
	for _, d := range s.fdSlots() {
		if flags&uint64(d.flag) != 0 {
			want++
		}
	}
	if len(fds) != want {
		return fail("%d descriptors for flags %d", len(fds), flags)
	}
	for _, d := range s.fdSlots() {
		if flags&uint64(d.flag) != 0 {
			*d.fd, fds = fds[0], fds[1:]
		}
	}
	s.Hide = flags&specHide != 0
	return s, nil
}
