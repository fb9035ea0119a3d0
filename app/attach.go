package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/tai-dev/tai/driver"
)

// userTerminal is the user's terminal lent to an attached TUI: raw mode
// while attached, cooked again at the detach (so that the policy can ask
// and Ctrl-C works while the agent settles), SIGWINCH forwarded.
type userTerminal struct {
	in, out *os.File
	reader  *cancelReader
	winch   chan os.Signal
	resized chan struct{}
	stopFwd chan struct{}

	mu    sync.Mutex
	saved *term.State
}

// attachTerminal prepares stdin/stdout for an attach; ok is false when
// they are not both terminals (then there is nothing to attach).
func attachTerminal(in io.Reader, out io.Writer) (*userTerminal, bool) {
	fi, ok1 := osFile(in)
	fo, ok2 := osFile(out)
	if !ok1 || !ok2 || !term.IsTerminal(int(fi.Fd())) || !term.IsTerminal(int(fo.Fd())) {
		return nil, false
	}
	return &userTerminal{in: fi, out: fo}, true
}

// attach returns the driver's view of the terminal; raw mode begins when
// the driver starts the attach.
func (u *userTerminal) attach(detachKey byte, std IO, agent string) *driver.Attach {
	u.winch, u.resized, u.stopFwd = make(chan os.Signal, 1), make(chan struct{}, 1), make(chan struct{})
	return &driver.Attach{
		In: readerFunc(func(p []byte) (int, error) {
			if u.reader == nil {
				return 0, errCanceled
			}
			return u.reader.Read(p)
		}),
		Out: u.out, DetachKey: detachKey, Resized: u.resized,
		Size: func() (int, int, bool) {
			w, h, err := term.GetSize(int(u.out.Fd()))
			return w, h, err == nil
		},
		OnAttach: func() error {
			if err := u.start(); err != nil {
				return err
			}
			fmt.Fprintf(std.Err, "tai: attached to %s; press Ctrl-%c to detach\r\n", agent, rune(detachKey+0x40))
			return nil
		},
		OnDetach: func() {
			u.restore()
			fmt.Fprintf(std.Err, "tai: detached from %s; it finishes what it is doing under tai's policy, then stops (Ctrl-C stops it now)\n", agent)
		},
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// start puts the terminal in raw mode and begins forwarding SIGWINCH.
func (u *userTerminal) start() error {
	r, err := newCancelReader(u.in)
	if err != nil {
		return err
	}
	st, err := term.MakeRaw(int(u.in.Fd()))
	if err != nil {
		return fmt.Errorf("raw mode: %w", err)
	}
	u.mu.Lock()
	u.saved = st
	u.mu.Unlock()
	u.reader = r
	winch, resized, stop := u.winch, u.resized, u.stopFwd
	signal.Notify(winch, syscall.SIGWINCH)
	go func() {
		for {
			select {
			case <-winch:
				select {
				case resized <- struct{}{}:
				default:
				}
			case <-stop:
				return
			}
		}
	}()
	return nil
}

// restore gives the terminal back in the mode it was found (once).
func (u *userTerminal) restore() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.saved != nil {
		_ = term.Restore(int(u.in.Fd()), u.saved)
		u.saved = nil
	}
}

// close ends the attach: cooked mode, no reader left blocked on stdin, no
// signal forwarding.
func (u *userTerminal) close() {
	u.restore()
	if u.reader != nil {
		u.reader.cancel()
	}
	if u.winch != nil {
		signal.Stop(u.winch)
		close(u.stopFwd)
		u.winch = nil
	}
}

// errCanceled is what a cancelled cancelReader returns.
var errCanceled = errors.New("read canceled")

// cancelReader reads a terminal without leaving a goroutine blocked in
// read(2) forever: it polls the terminal together with a pipe that cancel
// writes to.
type cancelReader struct {
	f        *os.File
	pr, pw   *os.File
	once     sync.Once
	canceled chan struct{}
}

func newCancelReader(f *os.File) (*cancelReader, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	return &cancelReader{f: f, pr: pr, pw: pw, canceled: make(chan struct{})}, nil
}

func (c *cancelReader) Read(p []byte) (int, error) {
	for {
		select {
		case <-c.canceled:
			return 0, errCanceled
		default:
		}
		fds := []unix.PollFd{{Fd: int32(c.f.Fd()), Events: unix.POLLIN}, {Fd: int32(c.pr.Fd()), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return 0, err
		}
		if fds[1].Revents != 0 {
			return 0, errCanceled
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0 {
			n, err := unix.Read(int(c.f.Fd()), p)
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
				continue
			}
			if err != nil {
				return 0, err
			}
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		}
	}
}

func (c *cancelReader) cancel() {
	c.once.Do(func() {
		close(c.canceled)
		_, _ = c.pw.Write([]byte{0})
	})
}
