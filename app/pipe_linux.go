package app

import (
	"io"

	"golang.org/x/sys/unix"
)

// stdoutPipeBytes is the size tai asks of a stdout that is a pipe: Linux's
// default pipe-max-size.
const stdoutPipeBytes = 1 << 20

// widenPipe gives a stdout that is a pipe a megabyte. A reader that lags
// (a CI log collector, a script's loop, the other core busy with the
// agent) then holds a streaming tai back only once a megabyte of frames
// waits, not every 64 KiB: each of those was a stall of the turn
// (BenchmarkFlood/stream-json). Refused (the user's pipe quota), the pipe
// stays as it was.
func widenPipe(w io.Writer) {
	f, ok := osFile(w)
	if !ok {
		return
	}
	c, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = c.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, stdoutPipeBytes)
		}
	})
}
