package shell

import (
	"path/filepath"
	"strings"

	"github.com/tai-dev/tai/internal/lazyre"
)

// This file reads paths and options as the kernel and the tools do: a
// path through /proc/self/root or /proc/self/cwd is where that link leads,
// //dev/sda is /dev/sda; a long option may be abbreviated (rm --rec).

// diskDevice matches a disk device's path.
var diskDevice = lazyre.New(`^/dev/(sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|md\d|dm-\d|mapper/|loop\d|nbd\d|sr\d|disk/by-|block/)`)

// ProcPath resolves an absolute path as the kernel walks it, for a
// process whose working directory is cwd: "." and ".." and repeated
// slashes go, /proc/<pid>/root (and thread-self's) is /, and
// /proc/self/cwd (thread-self/cwd, /proc/$$/cwd) is cwd. false when the
// path goes through a working directory that cannot be told: another
// process's, or an unknown one.
func ProcPath(p, cwd string) (string, bool) {
	var stack []string
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		stack = append(stack, c)
		// /proc/X/root, /proc/X/cwd, /proc/X/task/N/root and cwd
		n := len(stack)
		if stack[0] != "proc" || !(n == 3 || n == 5 && stack[2] == "task") {
			continue
		}
		link, pid := stack[n-1], stack[1]
		switch link {
		case "root":
			stack = stack[:0]
		case "cwd":
			if pid != "self" && pid != "thread-self" && pid != Unknown || cwd == "" || cwd == CwdUnknown {
				return "", false
			}
			stack = append(stack[:0], strings.Split(strings.Trim(cwd, "/"), "/")...)
		}
	}
	return "/" + strings.Join(stack, "/"), true
}

// DiskPath reads v as a path onto a disk device (/dev/sda, //dev/sda,
// /proc/self/root/dev/sda, /dev/disk/by-id/...): the device, or "".
func DiskPath(v string) string {
	if !strings.HasPrefix(v, "/") {
		return ""
	}
	p, ok := ProcPath(v, "")
	if !ok {
		return ""
	}
	if diskDevice().MatchString(p) {
		return p
	}
	return ""
}

// RunsProgram reports whether a program runs its input or arguments as a
// program of its own: shells, eval, source and interpreters.
func RunsProgram(name string) bool {
	return IsShell(name) || name == "eval" || name == "source" || name == "." || Interpreter(name) != ""
}

func ExpandHome(p, home string) string {
	if home == "" {
		return p
	}
	switch {
	case p == "~" || p == "$HOME" || p == "${HOME}":
		return home
	case strings.HasPrefix(p, "~/"):
		return filepath.Join(home, p[2:])
	case strings.HasPrefix(p, "$HOME/"):
		return filepath.Join(home, p[6:])
	case strings.HasPrefix(p, "${HOME}/"):
		return filepath.Join(home, p[8:])
	}
	return p
}

// LongOpts resolves a long option name as getopt_long and git's
// parse-options do: the option of that exact name, else every option it
// abbreviates. More than one is an ambiguity the tool refuses today, but
// a newer version (with another option) may tell apart: the caller reads
// them all, the most dangerous reading.
func LongOpts(name string, opts []string) []string {
	if name == "" {
		return nil
	}
	var out []string
	for _, o := range opts {
		if o == name {
			return []string{o}
		}
		if strings.HasPrefix(o, name) {
			out = append(out, o)
		}
	}
	return out
}
