package pty

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/tai-dev/tai/driver"
)

// restoreUser undoes the terminal modes a TUI may have set on the user's
// terminal through the attach (alternate screen, bracketed paste, mouse
// reporting, application cursor keys, hidden cursor, colours), so that
// their shell works again after a detach or an agent crash.
const restoreUser = "\x1b[?1049l\x1b[?2004l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?1l\x1b>\x1b[?25h\x1b[0m\r\n"

// Attach hands the TUI to the user: their keystrokes go to the agent
// (tai types nothing and answers no picker meanwhile: the user is there),
// the agent's output goes to their terminal, which the session's terminal
// follows in size. It returns when the user presses the detach key (or
// their input ends) and the agent is idle again, with any picker shown
// after the detach answered by policy; or when the agent exits; or when
// ctx is done.
func (s *Session) Attach(ctx context.Context, a driver.Attach) (driver.AttachEnd, error) {
	if a.In == nil || a.Out == nil {
		return "", fmt.Errorf("pty: attach: %w: no terminal", driver.ErrBadValue)
	}
	key := a.DetachKey
	if key == 0 {
		key = driver.DefaultDetachKey
	}
	select {
	case <-s.exited:
		return driver.AttachExited, s.exitError()
	default:
	}

	if a.OnAttach != nil {
		if err := a.OnAttach(); err != nil {
			return "", fmt.Errorf("pty: attach: %w", err)
		}
	}
	// Clear the user's screen and mirror the output from now on. A resize
	// makes the TUI redraw itself; at the same size, paint what the
	// emulator shows until the TUI next draws.
	_, _ = io.WriteString(a.Out, "\x1b[0m\x1b[H\x1b[2J")
	s.setMirror(a.Out)
	s.attached.Store(true)
	// release gives the screen back: once, at the detach or the end. The
	// user's terminal is theirs again and onDetach has run (the runner
	// records the detach there) before tai supervises the TUI again, so
	// nothing tai decides about a picker left open can precede the detach.
	var once sync.Once
	release := func(onDetach func()) {
		once.Do(func() {
			s.setMirror(nil)
			_, _ = io.WriteString(a.Out, restoreUser)
			if onDetach != nil {
				onDetach()
			}
			s.attached.Store(false)
			// Back to tai's own screen size (tall, so replies stay on it),
			// and a fresh look at the screen: a picker shown while
			// attached is now for the policy to answer.
			if s.homeCols > 0 {
				_ = s.proc.Resize(s.homeCols, s.homeRows)
			}
			s.wake()
		})
	}
	defer release(nil)
	if !s.followSize(a) {
		snap := s.proc.Screen.Snapshot()
		var b strings.Builder
		for i, l := range snap.Lines {
			if i > 0 {
				b.WriteString("\r\n")
			}
			b.WriteString(strings.TrimRight(l, " "))
		}
		fmt.Fprintf(&b, "\x1b[%d;%dH", snap.CursorY+1, snap.CursorX+1)
		_, _ = io.WriteString(a.Out, b.String())
	}

	detached := make(chan struct{})
	go func() {
		defer close(detached)
		buf := make([]byte, 4096)
		for {
			n, err := a.In.Read(buf)
			if n > 0 {
				chunk := buf[:n]
				i := bytes.IndexByte(chunk, key)
				if i >= 0 {
					chunk = chunk[:i]
				}
				if len(chunk) > 0 {
					if werr := s.send(string(chunk)); werr != nil {
						return
					}
				}
				if i >= 0 {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	for {
		select {
		case <-detached:
			s.log.Debug("user detached")
			release(a.OnDetach)
			return s.settleAfterDetach(ctx)
		case <-a.Resized:
			s.followSize(a)
		case <-s.exited:
			return driver.AttachExited, s.exitError()
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	}
}

// followSize sizes the session's terminal like the user's; false if it
// already was (or the size is unknown).
func (s *Session) followSize(a driver.Attach) bool {
	if a.Size == nil {
		return false
	}
	cols, rows, ok := a.Size()
	if !ok || cols <= 0 || rows <= 0 {
		return false
	}
	snap := s.proc.Screen.Snapshot()
	if snap.Cols == cols && snap.Rows == rows {
		return false
	}
	if err := s.proc.Resize(cols, rows); err != nil {
		s.log.Debug("resize", "err", err)
		return false
	}
	return true
}

// settleAfterDetach waits for the agent to finish what the user started:
// tai supervises again (pickers by policy) until the screen reads idle.
func (s *Session) settleAfterDetach(ctx context.Context) (driver.AttachEnd, error) {
	for {
		st, changed := s.statusNow()
		if st == StatusIdle {
			return driver.AttachDetached, nil
		}
		select {
		case <-changed:
		case <-s.exited:
			return driver.AttachExited, s.exitError()
		case <-ctx.Done():
			return "", context.Cause(ctx)
		}
	}
}

// setMirror sets where the agent's output is copied (nil: nowhere).
func (s *Session) setMirror(w io.Writer) {
	s.mirrorMu.Lock()
	s.mirror = w
	s.mirrorMu.Unlock()
}

// wake makes the loop read the screen again soon.
func (s *Session) wake() {
	select {
	case s.sig <- struct{}{}:
	default:
	}
}

// statusNow is the loop's last status and a channel closed when it
// changes.
func (s *Session) statusNow() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pubStatus, s.statusCh
}

// publishStatus is called by the loop on every status change.
func (s *Session) publishStatus(st string) {
	s.mu.Lock()
	s.pubStatus = st
	close(s.statusCh)
	s.statusCh = make(chan struct{})
	s.mu.Unlock()
}
