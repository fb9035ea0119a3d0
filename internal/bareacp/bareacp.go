// Package bareacp is the baseline tai's benchmarks measure it against: the
// least an ACP client must do. It starts the agent, opens a session, sends
// one prompt and reads every line with bufio and one encoding/json decode,
// answering permission requests with the first allow option, until the
// prompt's response.
package bareacp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Run is what one run of the bare client saw and cost.
type Run struct {
	Updates int           // session/update notifications seen
	Wall    time.Duration // from the agent's start to its exit
	// CPU is user+sys time: this process's during the run plus the
	// agent's (Agent).
	CPU, Agent time.Duration
}

// Client runs the agent argv in dir through one prompt.
func Client(dir string, argv []string) (r Run, err error) {
	t0, cpu0 := time.Now(), SelfCPU()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	in, err := cmd.StdinPipe()
	if err != nil {
		return r, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return r, err
	}
	defer func() {
		in.Close()
		_ = cmd.Wait()
		r.Wall = time.Since(t0)
		r.Agent = ProcessCPU(cmd.ProcessState)
		r.CPU = SelfCPU() - cpu0 + r.Agent
	}()
	rd := bufio.NewReaderSize(outPipe, 64<<10)
	w := bufio.NewWriter(in)
	send := func(format string, args ...any) error {
		fmt.Fprintf(w, format+"\n", args...)
		return w.Flush()
	}
	type message struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
			Options   []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		} `json:"params"`
		Result struct {
			SessionID  string `json:"sessionId"`
			StopReason string `json:"stopReason"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	cwd, _ := json.Marshal(dir)
	err = errors.Join(
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`),
		send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%s,"mcpServers":[]}}`, cwd))
	for err == nil {
		line, rerr := rd.ReadSlice('\n')
		if rerr == bufio.ErrBufferFull { // a line longer than the buffer
			long := bytes.Clone(line)
			for rerr == bufio.ErrBufferFull {
				line, rerr = rd.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if rerr != nil {
			return r, fmt.Errorf("agent output ended: %w", rerr)
		}
		var m message
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch {
		case m.Method == "session/update":
			r.Updates++
		case m.Method == "session/request_permission":
			opt := ""
			for _, o := range m.Params.Options {
				if strings.HasPrefix(o.Kind, "allow") {
					opt = o.OptionID
					break
				}
			}
			err = send(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":%q}}}`, m.ID, opt)
		case m.Method != "":
			err = send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"not supported"}}`, m.ID)
		case string(m.ID) == "2":
			sid, _ := json.Marshal(m.Result.SessionID)
			err = send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%s,"prompt":[{"type":"text","text":"go"}]}}`, sid)
		case string(m.ID) == "3":
			if len(m.Error) > 0 {
				return r, fmt.Errorf("prompt failed: %s", m.Error)
			}
			return r, nil
		}
	}
	return r, err
}

// ProcessCPU is user+sys time of a finished process, with its reaped
// children (tai's agent) included.
func ProcessCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// SelfCPU is this process's user+sys time so far.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ChildrenCPU is the user+sys time of this process's reaped children so
// far.
func ChildrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
