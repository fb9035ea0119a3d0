package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/quartz"
)

// HubOptions configure the hub's NATS server with JetStream.
type HubOptions struct {
	Listen string // host:port; port 0 or -1 = a free one
	Store  string // JetStream's store directory (required)
	Token  string // clients must present it; "" serves anyone who connects (tai hub --insecure)
	// Server is the nats-server program; "" looks for nats-server on
	// PATH, then next to tai's own executable.
	Server string
	Logger *slog.Logger // the server's log lines, at debug (errors at warn); nil drops them
	Clock  quartz.Clock // for the ready timeout and the stop grace; nil is the real one
}

// ErrNoServer is StartHub's error when no nats-server program is found.
var ErrNoServer = errors.New("no nats-server program found: install one (apt-get install nats-server, or " +
	"go install github.com/nats-io/nats-server/v2@latest), pass --nats-server PATH, or coordinate on a running " +
	"server with --coordinate --nats URL")

// Hub is a nats-server process with JetStream that tai started and
// watches. The server is its own program, not linked into tai: every tai
// that runs an agent would otherwise carry (and start) all of it.
type Hub struct {
	cmd   *exec.Cmd
	url   string
	conf  string
	done  chan struct{} // closed once the process has been waited for
	err   error         // the wait's error, after done
	clock quartz.Clock
}

// hubReadyTimeout bounds a start that never reports ready.
const hubReadyTimeout = 30 * time.Second

// StartHub starts a nats-server on o.Store and waits until it takes
// clients. A hub restarted on the same store has every stream, bucket and
// message. The server dies with tai (SIGTERM, which it handles by
// flushing and shutting down).
func StartHub(ctx context.Context, o HubOptions) (*Hub, error) {
	if o.Store == "" {
		return nil, fmt.Errorf("remote: the hub needs a store directory")
	}
	host, port, err := hubListen(o.Listen)
	if err != nil {
		return nil, err
	}
	prog, err := FindServer(o.Server)
	if err != nil {
		return nil, err
	}
	store, err := filepath.Abs(o.Store)
	if err != nil {
		return nil, fmt.Errorf("remote: hub store: %w", err)
	}
	if err := os.MkdirAll(store, 0o700); err != nil {
		return nil, fmt.Errorf("remote: hub store: %w", err)
	}
	conf, err := hubConfig(host, port, store, o.Token)
	if err != nil {
		return nil, err
	}
	// The token is in the file, never on the command line (ps shows that),
	// and the file is where no agent reads it.
	confPath := hubConfPath(store)
	if err := os.WriteFile(confPath, conf, 0o600); err != nil {
		return nil, fmt.Errorf("remote: hub config: %w", err)
	}
	cmd := exec.Command(prog, "-c", confPath)
	cmd.Dir = store
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("remote: hub: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("remote: starting %s: %w", prog, err)
	}
	clock := o.Clock
	if clock == nil {
		clock = quartz.NewReal()
	}
	h := &Hub{cmd: cmd, conf: confPath, done: make(chan struct{}), clock: clock}
	ready := make(chan string, 1)
	logs := &serverLog{logger: o.Logger}
	go func() {
		logs.follow(stderr, ready)
		h.err = cmd.Wait()
		close(h.done)
	}()
	timeout := clock.NewTimer(hubReadyTimeout, "hub", "ready")
	defer timeout.Stop()
	select {
	case addr := <-ready:
		h.url = "nats://" + addr
		return h, nil
	case <-h.done:
		return nil, fmt.Errorf("remote: %s ended before it was ready (%v)%s", prog, h.err, logs.tail())
	case <-timeout.C:
		h.Close()
		return nil, fmt.Errorf("remote: %s not ready after %v%s", prog, hubReadyTimeout, logs.tail())
	case <-ctx.Done():
		h.Close()
		return nil, fmt.Errorf("remote: %s not ready: %w", prog, context.Cause(ctx))
	}
}

// hubListen reads --listen: host and port, -1 for a free port.
func hubListen(listen string) (string, int, error) {
	if listen == "" {
		return "127.0.0.1", -1, nil
	}
	h, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("remote: --listen %q: %w", listen, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < -1 || n > 65535 {
		return "", 0, fmt.Errorf("remote: --listen %q: bad port", listen)
	}
	if n == 0 {
		n = -1
	}
	if h == "" {
		h = "0.0.0.0"
	}
	return h, n, nil
}

// FindServer finds the nats-server tai hub runs: named (a path or a name
// on PATH) when given, else nats-server on PATH, else next to tai's own
// executable.
func FindServer(named string) (string, error) {
	if named != "" {
		p, err := exec.LookPath(named)
		if err != nil {
			return "", fmt.Errorf("remote: --nats-server %s: %w", named, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "nats-server")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("remote: %w", ErrNoServer)
}

// hubConfig is the server's configuration file: clients only, on one
// address; no monitoring port, websocket, leaf node, cluster or gateway
// listener (each would be another way in, without the token). Strings are
// quoted with the escapes the NATS config parser reads; a control
// character has none.
func hubConfig(host string, port int, store, token string) ([]byte, error) {
	q := func(what, s string) (string, error) {
		if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "", fmt.Errorf("remote: the hub's %s has a control character", what)
		}
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`, nil
	}
	var b strings.Builder
	qh, err := q("listen host", host)
	if err != nil {
		return nil, err
	}
	qs, err := q("store path", store)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, "host: %s\nport: %d\nmax_payload: %d\njetstream {\n  store_dir: %s\n}\n", qh, port, MaxMessage, qs)
	if token != "" {
		qt, err := q("token", token)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "authorization {\n  token: %s\n}\n", qt)
	}
	return []byte(b.String()), nil
}

// serverLog follows the server's log on its stderr: it finds the client
// address and the ready line, passes each line to the logger, and keeps
// the last few for an error.
type serverLog struct {
	logger *slog.Logger
	mu     sync.Mutex
	last   []string
}

// The lines nats-server (2.9 to 2.15 at least) logs as it starts.
const (
	listeningPrefix = "Listening for client connections on "
	readyLine       = "Server is ready"
)

func (l *serverLog) follow(r io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	addr := ""
	for sc.Scan() {
		line := sc.Text()
		l.keep(line)
		if l.logger != nil {
			level := slog.LevelDebug
			if strings.Contains(line, "[ERR]") || strings.Contains(line, "[FTL]") || strings.Contains(line, "[WRN]") {
				level = slog.LevelWarn
			}
			l.logger.Log(context.Background(), level, "nats-server", "line", line)
		}
		if _, a, ok := strings.Cut(line, listeningPrefix); ok {
			addr = strings.TrimSpace(a)
		}
		if strings.Contains(line, readyLine) && addr != "" && ready != nil {
			ready <- addr
			ready = nil
		}
	}
	// A scan error (a line over 1 MiB) must not block the server on a
	// full pipe.
	_, _ = io.Copy(io.Discard, r)
}

func (l *serverLog) keep(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.last) == 8 {
		l.last = l.last[1:]
	}
	l.last = append(l.last, line)
}

// tail is the last lines, for an error message.
func (l *serverLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.last) == 0 {
		return ""
	}
	return ":\n" + strings.Join(l.last, "\n")
}

// URL is the hub's client URL.
func (h *Hub) URL() string { return h.url }

// Done is closed when the server process has ended.
func (h *Hub) Done() <-chan struct{} { return h.done }

// Err is why the server ended, once Done is closed.
func (h *Hub) Err() error {
	select {
	case <-h.done:
		if h.err == nil {
			return errors.New("remote: the hub's nats-server exited")
		}
		return fmt.Errorf("remote: the hub's nats-server: %w", h.err)
	default:
		return nil
	}
}

// hubStopGrace is how long a SIGTERMed server has to flush its store.
const hubStopGrace = 15 * time.Second

// Close stops the server (SIGTERM, then SIGKILL after a grace) and waits
// for it.
func (h *Hub) Close() {
	select {
	case <-h.done:
	default:
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		t := h.clock.NewTimer(hubStopGrace, "hub", "stop")
		defer t.Stop()
		select {
		case <-h.done:
		case <-t.C:
			_ = h.cmd.Process.Kill()
			<-h.done
		}
	}
	_ = os.Remove(h.conf)
}
