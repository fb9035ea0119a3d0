package app

import "golang.org/x/sys/unix"

// landlockABI asks the kernel which Landlock ABI it has:
// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION). 0 with
// an error: none (ENOSYS: not built in; EOPNOTSUPP: disabled at boot).
// A stand-in until the sandbox package offers one.
func landlockABI() (int, error) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(abi), nil
}
