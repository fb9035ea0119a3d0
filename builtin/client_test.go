package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tai-dev/tai/internal/testutil"
	"github.com/tai-dev/tai/jsonrpc"
	"github.com/tai-dev/tai/protocol/acp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// wireLine is one line the test client read from the agent, in wire order.
type wireLine struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	raw    string

	note   acp.SessionNotification // decoded once, for session/update
	noteOK bool
}

func (l wireLine) isResponse() bool { return l.Method == "" && (l.Result != nil || l.Error != nil) }

func (l wireLine) update() (acp.SessionNotification, bool) { return l.note, l.noteOK }

// permissionChooser answers a permission request: an option id, or "" to
// answer "cancelled". block makes the test client wait for the request's
// cancellation instead.
type permissionChooser func(req acp.RequestPermissionRequest) (optionID string, block bool)

func allowAll(req acp.RequestPermissionRequest) (string, bool) {
	return req.Options[0].OptionId, false
}

// testClient is a small ACP client on jsonrpc: fs served from a temp dir
// (confined to it), terminals run as real processes, permissions answered
// by a chooser.
type testClient struct {
	t      *testing.T
	conn   *jsonrpc.Conn
	root   string
	choose permissionChooser

	serveErr chan error
	stderr   *testutil.Buffer
	toAgent  *io.PipeWriter

	mu          sync.Mutex
	lines       []wireLine
	permissions []acp.RequestPermissionRequest
	methods     []string // agent → client requests, in order
	cancelled   int      // requests whose ctx was cancelled ($/cancel_request)
	terms       map[string]*fakeTerm
	nextTerm    int
}

type clientOpts struct {
	script *Script
	sleep  func(context.Context, time.Duration) error
	choose permissionChooser
}

func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// startAgent runs Serve over pipes and connects a test client to it.
func startAgent(t *testing.T, o clientOpts) *testClient {
	t.Helper()
	if o.sleep == nil {
		o.sleep = noSleep
	}
	if o.choose == nil {
		o.choose = allowAll
	}
	agentIn, toAgent := io.Pipe()
	fromAgent, agentOut := io.Pipe()
	c := &testClient{
		t: t, root: t.TempDir(), choose: o.choose,
		serveErr: make(chan error, 1), stderr: &testutil.Buffer{}, toAgent: toAgent,
		terms: map[string]*fakeTerm{},
	}
	// TempDir may be a symlink on some systems; the agent gets the real path.
	if r, err := filepath.EvalSymlinks(c.root); err == nil {
		c.root = r
	}
	logger := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	go func() {
		c.serveErr <- Serve(context.Background(), agentIn, agentOut, Options{
			Script: o.script, Logger: logger, Sleep: o.sleep, Stderr: c.stderr, Version: "test",
		})
	}()
	c.conn = jsonrpc.NewConn(fromAgent, toAgent, c, jsonrpc.Options{
		Trace: func(dir jsonrpc.Direction, line []byte) {
			if dir != jsonrpc.In {
				return
			}
			var l wireLine
			_ = json.Unmarshal(line, &l)
			l.raw = string(line)
			if l.Method == acp.MethodSessionUpdate {
				l.noteOK = json.Unmarshal(l.Params, &l.note) == nil
			}
			l.Params = nil // decoded; don't keep big payloads twice
			c.mu.Lock()
			c.lines = append(c.lines, l)
			c.mu.Unlock()
		},
	})
	t.Cleanup(func() { c.stop() })
	return c
}

// stop closes the agent's stdin and waits for Serve; it returns Serve's error.
func (c *testClient) stop() error {
	c.conn.Close(nil)
	_ = c.toAgent.Close()
	select {
	case err := <-c.serveErr:
		c.serveErr <- err // keep it for a second stop
		c.mu.Lock()
		for _, ft := range c.terms {
			ft.kill()
		}
		c.mu.Unlock()
		return err
	case <-time.After(10 * time.Second):
		c.t.Fatal("Serve did not return after stdin closed")
		return nil
	}
}

func (c *testClient) HandleNotification(context.Context, string, json.RawMessage) {}

func (c *testClient) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	c.mu.Lock()
	c.methods = append(c.methods, method)
	c.mu.Unlock()
	defer func() {
		if ctx.Err() != nil {
			c.mu.Lock()
			c.cancelled++
			c.mu.Unlock()
		}
	}()
	switch method {
	case acp.MethodSessionRequestPermission:
		var req acp.RequestPermissionRequest
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.permissions = append(c.permissions, req)
		c.mu.Unlock()
		id, block := c.choose(req)
		if block {
			<-ctx.Done()
			return acp.CancelPermission(), nil
		}
		if id == "" {
			return acp.CancelPermission(), nil
		}
		return acp.SelectPermission(id), nil
	case acp.MethodFsReadTextFile:
		var req acp.ReadTextFileRequest
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, err
		}
		if err := c.confine(req.Path); err != nil {
			return nil, err
		}
		b, err := os.ReadFile(req.Path)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: err.Error()}
		}
		return acp.ReadTextFileResponse{Content: string(b)}, nil
	case acp.MethodFsWriteTextFile:
		var req acp.WriteTextFileRequest
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, err
		}
		if err := c.confine(req.Path); err != nil {
			return nil, err
		}
		return acp.WriteTextFileResponse{}, os.WriteFile(req.Path, []byte(req.Content), 0o644)
	case acp.MethodTerminalCreate:
		var req acp.CreateTerminalRequest
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, err
		}
		return c.createTerminal(req)
	case acp.MethodTerminalWaitForExit, acp.MethodTerminalOutput, acp.MethodTerminalKill, acp.MethodTerminalRelease:
		var req acp.TerminalOutputRequest
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, err
		}
		c.mu.Lock()
		ft := c.terms[req.TerminalId]
		if method == acp.MethodTerminalRelease {
			delete(c.terms, req.TerminalId)
		}
		c.mu.Unlock()
		if ft == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeResourceNotFound, Message: "no terminal " + req.TerminalId}
		}
		switch method {
		case acp.MethodTerminalWaitForExit:
			select {
			case <-ft.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return acp.WaitForTerminalExitResponse{ExitCode: acp.Ptr(ft.cmd.ProcessState.ExitCode())}, nil
		case acp.MethodTerminalOutput:
			resp := acp.TerminalOutputResponse{Output: ft.out.String()}
			select {
			case <-ft.done:
				resp.ExitStatus = &acp.TerminalExitStatus{ExitCode: acp.Ptr(ft.cmd.ProcessState.ExitCode())}
			default:
			}
			return resp, nil
		default:
			ft.kill()
			return struct{}{}, nil
		}
	}
	return nil, jsonrpc.ErrMethodNotFound(method)
}

func (c *testClient) confine(path string) error {
	rel, err := filepath.Rel(c.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || !filepath.IsAbs(path) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "path outside the workspace: " + path}
	}
	return nil
}

type fakeTerm struct {
	cmd  *exec.Cmd
	out  *testutil.Buffer
	done chan struct{}
}

func (ft *fakeTerm) kill() {
	select {
	case <-ft.done:
	default:
		_ = ft.cmd.Process.Kill()
		<-ft.done
	}
}

func (c *testClient) createTerminal(req acp.CreateTerminalRequest) (any, error) {
	cmd := exec.Command(req.Command, req.Args...)
	if req.Cwd != nil {
		cmd.Dir = *req.Cwd
	}
	ft := &fakeTerm{cmd: cmd, out: &testutil.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = ft.out, ft.out
	if err := cmd.Start(); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	go func() {
		_ = cmd.Wait()
		close(ft.done)
	}()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextTerm++
	id := fmt.Sprintf("term-%d", c.nextTerm)
	c.terms[id] = ft
	return acp.CreateTerminalResponse{TerminalId: id}, nil
}

var fullCaps = acp.ClientCapabilities{Fs: acp.FileSystemCapability{ReadTextFile: true, WriteTextFile: true}, Terminal: true}

func (c *testClient) call(method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.conn.Call(ctx, method, params, result)
}

func (c *testClient) initialize(caps acp.ClientCapabilities) acp.InitializeResponse {
	c.t.Helper()
	var resp acp.InitializeResponse
	err := c.call(acp.MethodInitialize, acp.InitializeRequest{
		ProtocolVersion: 1, ClientCapabilities: caps, ClientInfo: &acp.Implementation{Name: "test", Version: "0"},
	}, &resp)
	if err != nil {
		c.t.Fatalf("initialize: %v", err)
	}
	return resp
}

func (c *testClient) newSession() acp.NewSessionResponse {
	c.t.Helper()
	var resp acp.NewSessionResponse
	if err := c.call(acp.MethodSessionNew, acp.NewSessionRequest{Cwd: c.root}, &resp); err != nil {
		c.t.Fatalf("session/new: %v", err)
	}
	// The agent sends its commands after the response, on a goroutine of its
	// own: wait for them, so that they do not land inside what a test reads
	// next (a replay, say).
	waitFor(c.t, "the new session's available commands", func() bool {
		for _, l := range c.snapshot() {
			if n, ok := l.update(); ok && n.SessionId == resp.SessionId && n.Update.AvailableCommandsUpdate != nil {
				return true
			}
		}
		return false
	})
	return resp
}

func (c *testClient) prompt(sessionID, text string) acp.StopReason {
	c.t.Helper()
	var resp acp.PromptResponse
	err := c.call(acp.MethodSessionPrompt, acp.PromptRequest{SessionId: sessionID, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}, &resp)
	if err != nil {
		c.t.Fatalf("session/prompt: %v", err)
	}
	return resp.StopReason
}

func (c *testClient) snapshot() []wireLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wireLine(nil), c.lines...)
}

// updates returns the session/update notifications received so far.
func (c *testClient) updates() []acp.SessionUpdate {
	var out []acp.SessionUpdate
	for _, l := range c.snapshot() {
		if n, ok := l.update(); ok {
			out = append(out, n.Update)
		}
	}
	return out
}

// messageText concatenates the agent_message_chunk texts received so far.
func (c *testClient) messageText() string {
	var b strings.Builder
	for _, u := range c.updates() {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

func kinds(us []acp.SessionUpdate) map[string]int {
	m := map[string]int{}
	for _, u := range us {
		m[updateKind(u)]++
	}
	return m
}

func updateKind(u acp.SessionUpdate) string {
	b, _ := json.Marshal(u)
	var k struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	_ = json.Unmarshal(b, &k)
	return k.SessionUpdate
}

func mustScript(t *testing.T, src string) *Script {
	t.Helper()
	sc, err := ParseScript([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// rpcCode returns the JSON-RPC error code of err, or 0.
func rpcCode(err error) int {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// waitFor polls cond for up to 20 s, the bound of a call: only a stuck
// agent takes that long, even on a loaded machine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func pipePair() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }
