package policy

import (
	"strings"

	"github.com/tai-dev/tai/policy/shell"
)

// This file reads the paths and options of the commands the floor judges
// as the kernel and the tools do: a path through /proc/self/root or
// /proc/self/cwd is where that link leads, //dev/sda is /dev/sda; a long
// option may be abbreviated (rm --rec); disk writers and formatters are
// known by what they write.

// rmLongOpts and the like are the tools' long options, for abbreviations.
var (
	rmLongOpts    = []string{"recursive", "force", "interactive", "one-file-system", "no-preserve-root", "preserve-root", "dir", "verbose", "help", "version"}
	chmodLongOpts = []string{"changes", "silent", "quiet", "verbose", "no-preserve-root", "preserve-root", "reference", "recursive",
		"dereference", "no-dereference", "from", "help", "version"}
	mvLongOpts = []string{"backup", "force", "interactive", "no-clobber", "no-copy", "strip-trailing-slashes", "suffix",
		"target-directory", "no-target-directory", "update", "verbose", "context", "exchange", "debug", "help", "version"}
)

// hasLongOpt reports whether a (an option word, --name or --name=value)
// may be the long option want.
func hasLongOpt(a string, opts []string, want string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
	for _, o := range shell.LongOpts(name, opts) {
		if o == want {
			return true
		}
	}
	return false
}

// isFormatter reports whether a program makes or wipes a filesystem.
func isFormatter(name string) bool {
	switch name {
	case "mke2fs", "mkswap", "wipefs", "mkdosfs", "mkntfs", "mkexfatfs", "mformat", "sg_format", "zpool":
		return true
	}
	return strings.HasPrefix(name, "mkfs")
}

// isPartitioner reports whether a program rewrites a disk's partition
// table, or formats it as a block device (LVM, LUKS, RAID).
func isPartitioner(name string) bool {
	switch name {
	case "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "cgdisk", "parted", "cryptsetup", "pvcreate", "mdadm", "flashrom":
		return true
	}
	return false
}

// partitions returns the disk device a partitioner is given, unless it
// only lists (fdisk -l, parted -l).
func partitions(args []shell.Word, cwds []string) (string, bool) {
	dev := ""
	for _, a := range args {
		switch a.Val {
		case "-l", "--list", "-L", "print", "--print":
			return "", false
		}
		if d := shell.DiskPath(a.Val); d != "" && dev == "" {
			dev = d
		}
	}
	return dev, dev != ""
}

// rawWrite returns the disk device a program writes raw, or "": dd (and
// dcfldd, dc3dd) of=, shred's files, tee's, and the destination of cp,
// install, ddrescue and rsync.
func (e *Engine) rawWrite(name string, args []shell.Word, cwds []string) string {
	var targets []string
	switch name {
	case "dd", "dcfldd", "dc3dd":
		for _, a := range args {
			for _, k := range []string{"of=", "hof=", "of1=", "hofs=", "ofs="} {
				if v, ok := strings.CutPrefix(a.Val, k); ok {
					targets = append(targets, v)
				}
			}
		}
	case "shred", "tee", "blkdiscard":
		for _, a := range args {
			targets = append(targets, a.Val)
		}
	case "cp", "install", "ddrescue", "rsync", "pv":
		var pos []string
		for i := 0; i < len(args); i++ {
			v := args[i].Val
			switch {
			case v == "-t" && i+1 < len(args):
				return shell.DiskPath(args[i+1].Val)
			case strings.HasPrefix(v, "--target-directory=") || strings.HasPrefix(v, "-t") && len(v) > 2:
				return shell.DiskPath(strings.TrimPrefix(strings.TrimPrefix(v, "--target-directory="), "-t"))
			case strings.HasPrefix(v, "-") && len(v) > 1:
			default:
				pos = append(pos, v)
			}
		}
		if name == "pv" {
			return "" // pv writes to its output: a redirection
		}
		if len(pos) > 1 {
			targets = pos[len(pos)-1:] // the others are read
		}
	}
	for _, t := range targets {
		if d := shell.DiskPath(t); d != "" && !isSafeDevice(strings.TrimPrefix(d, "/dev/")) {
			return d
		}
	}
	return ""
}

// gitConfigWrites records in conf what a `git config KEY VALUE` (or git
// config set) of the line sets: a later git command of the same line reads
// it. A value not known before it runs is kept unknown.
func gitConfigWrites(args []shell.Word, conf gitConf) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i].Val, "-") {
		if v := args[i].Val; v == "-C" || v == "-c" || v == "--git-dir" || v == "--work-tree" {
			i++
		}
		i++
	}
	if i >= len(args) || args[i].Val != "config" {
		return
	}
	var pos []shell.Word
	for _, a := range args[i+1:] {
		switch {
		case a.Val == "set" && len(pos) == 0:
		case strings.HasPrefix(a.Val, "-"):
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) == 2 && pos[0].Static() {
		conf.add(pos[0].Val, pos[1].Val)
	}
}
