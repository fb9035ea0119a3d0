package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tai-dev/tai/jsonrpc"
	"github.com/tai-dev/tai/protocol/acp"
	"github.com/tai-dev/tai/render"
)

// Permission option ids offered for file edits and bare permission steps.
const (
	OptionAllowOnce    = "allow-once"
	OptionAllowAlways  = "allow-always"
	OptionRejectOnce   = "reject-once"
	OptionRejectAlways = "reject-always"
	// OptionReject is the deny option of a switch_mode request, whose allow
	// options are mode ids.
	OptionReject = "reject"
)

var standardOptions = []acp.PermissionOption{
	{OptionId: OptionAllowOnce, Name: "Allow", Kind: acp.PermissionAllowOnce},
	{OptionId: OptionAllowAlways, Name: "Always allow", Kind: acp.PermissionAllowAlways},
	{OptionId: OptionRejectOnce, Name: "Reject", Kind: acp.PermissionRejectOnce},
	{OptionId: OptionRejectAlways, Name: "Never allow", Kind: acp.PermissionRejectAlways},
}

// cleanupTimeout bounds requests that must go out even after a cancel
// (terminal/kill and terminal/release).
const cleanupTimeout = 5 * time.Second

// call makes a client request bound to the turn. A cancelled turn surfaces
// as errCancelled (the jsonrpc Conn has sent $/cancel_request for it).
func (t *turn) call(method string, params, result any) error {
	err := t.a.conn.Call(t.ctx, method, params, result)
	if err != nil && t.ctx.Err() != nil {
		return errCancelled
	}
	return err
}

// clientError reports whether err is the client's answer (as opposed to a
// dead connection), which a step reports and goes on from.
func clientError(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr)
}

func errText(err error) string {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return fmt.Sprintf("%s (code %d)", rpcErr.Message, rpcErr.Code)
	}
	return err.Error()
}

func rawJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v) // plain maps of strings and numbers
	return b
}

func (t *turn) toolCall(tc acp.ToolCall) error {
	return t.send(acp.SessionUpdate{ToolCall: &tc})
}

func (t *turn) toolUpdate(id string, status acp.ToolCallStatus, content []acp.ToolCallContent, rawOutput any) error {
	u := &acp.ToolCallUpdate{ToolCallId: id, Status: acp.Ptr(status), Content: content}
	if rawOutput != nil {
		u.RawOutput = rawJSON(rawOutput)
	}
	return t.send(acp.SessionUpdate{ToolCallUpdate: u})
}

// finishCancelled marks a tool call failed because the turn was cancelled
// and returns errCancelled (or the send error).
func (t *turn) finishCancelled(id string) error {
	if err := t.toolUpdate(id, acp.ToolCallFailed, []acp.ToolCallContent{acp.ToolText("Cancelled.")}, nil); err != nil {
		return err
	}
	return errCancelled
}

// askPermission sends session/request_permission. It returns the selected
// option, or errCancelled when the client answered "cancelled" or the turn
// was cancelled meanwhile. A client error counts as a rejection.
func (t *turn) askPermission(tc acp.ToolCallUpdate, options []acp.PermissionOption) (acp.PermissionOption, error) {
	var resp acp.RequestPermissionResponse
	err := t.call(acp.MethodSessionRequestPermission, acp.RequestPermissionRequest{
		SessionId: t.s.id, ToolCall: tc, Options: options,
	}, &resp)
	switch {
	case errors.Is(err, errCancelled):
		return acp.PermissionOption{}, errCancelled
	case clientError(err):
		t.a.log.Warn("builtin agent: permission request failed; treating as rejected", "err", err)
		return acp.PermissionOption{Kind: acp.PermissionRejectOnce}, nil
	case err != nil:
		return acp.PermissionOption{}, err
	}
	switch {
	case resp.Outcome.Cancelled != nil:
		return acp.PermissionOption{}, errCancelled
	case resp.Outcome.Selected != nil:
		for _, o := range options {
			if o.OptionId == resp.Outcome.Selected.OptionId {
				return o, nil
			}
		}
		t.a.log.Warn("builtin agent: client selected an option it was not offered; treating as rejected",
			"optionId", resp.Outcome.Selected.OptionId)
	default:
		t.a.log.Warn("builtin agent: unknown permission outcome; treating as rejected", "outcome", resp.Outcome.Kind())
	}
	return acp.PermissionOption{Kind: acp.PermissionRejectOnce}, nil
}

func allowed(o acp.PermissionOption) bool {
	return o.Kind == acp.PermissionAllowOnce || o.Kind == acp.PermissionAllowAlways
}

func (t *turn) readFile(path string, line, limit int) (string, error) {
	req := acp.ReadTextFileRequest{SessionId: t.s.id, Path: path}
	if line > 0 {
		req.Line = acp.Ptr(line)
	}
	if limit > 0 {
		req.Limit = acp.Ptr(limit)
	}
	var resp acp.ReadTextFileResponse
	if err := t.call(acp.MethodFsReadTextFile, req, &resp); err != nil {
		return "", err
	}
	return resp.Content, nil
}

func (t *turn) read(rs *ReadStep) error {
	if !t.a.caps().Fs.ReadTextFile {
		return t.say(fmt.Sprintf("I can't read %s: the client did not advertise fs.readTextFile.\n\n", rs.Path))
	}
	path := t.s.abs(rs.Path)
	id := t.s.nextID("read")
	if err := t.toolCall(acp.ToolCall{
		ToolCallId: id, Title: "Read " + rs.Path, Kind: acp.ToolKindRead, Status: acp.ToolCallPending,
		Locations: []acp.ToolCallLocation{{Path: path}}, RawInput: rawJSON(map[string]any{"path": path}), Name: "read",
	}); err != nil {
		return err
	}
	if err := t.toolUpdate(id, acp.ToolCallInProgress, nil, nil); err != nil {
		return err
	}
	if rs.Repeat > 1 {
		return t.readPipelined(id, path, rs)
	}
	content, err := t.readFile(path, rs.Line, rs.Limit)
	switch {
	case errors.Is(err, errCancelled):
		return t.finishCancelled(id)
	case clientError(err):
		if err := t.toolUpdate(id, acp.ToolCallFailed, []acp.ToolCallContent{acp.ToolText("Read failed: " + errText(err))}, nil); err != nil {
			return err
		}
		return t.say(fmt.Sprintf("I couldn't read %s: %s\n\n", rs.Path, errText(err)))
	case err != nil:
		return err
	}
	return t.toolUpdate(id, acp.ToolCallCompleted, []acp.ToolCallContent{acp.ToolText(content)},
		map[string]any{"bytes": len(content)})
}

// readPipelined sends rs.Repeat reads at once and reports their total size.
func (t *turn) readPipelined(id, path string, rs *ReadStep) error {
	sizes := make([]int, rs.Repeat)
	errs := make([]error, rs.Repeat)
	var wg sync.WaitGroup
	for i := range rs.Repeat {
		wg.Go(func() {
			content, err := t.readFile(path, rs.Line, rs.Limit)
			sizes[i], errs[i] = len(content), err
		})
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			if errors.Is(err, errCancelled) {
				return t.finishCancelled(id)
			}
			return t.toolUpdate(id, acp.ToolCallFailed, []acp.ToolCallContent{acp.ToolText("Read failed: " + errText(err))}, nil)
		}
		total += sizes[i]
	}
	return t.toolUpdate(id, acp.ToolCallCompleted, []acp.ToolCallContent{acp.ToolText(fmt.Sprintf("%d reads, %d bytes", rs.Repeat, total))},
		map[string]any{"bytes": total})
}

func (t *turn) write(ws *WriteStep) error {
	caps := t.a.caps()
	if !caps.Fs.WriteTextFile {
		return t.say(fmt.Sprintf("I can't write %s: the client did not advertise fs.writeTextFile.\n\n", ws.Path))
	}
	path := t.s.abs(ws.Path)
	// Show a real diff when the file exists and can be read; a read error
	// means a new file.
	var old *string
	if caps.Fs.ReadTextFile {
		content, err := t.readFile(path, 0, 0)
		switch {
		case errors.Is(err, errCancelled):
			return errCancelled
		case err == nil:
			old = &content
		case !clientError(err):
			return err
		}
	}
	id := t.s.nextID("write")
	title := "Write " + ws.Path
	diff := []acp.ToolCallContent{acp.ToolDiff(path, old, ws.Content)}
	locs := []acp.ToolCallLocation{{Path: path}}
	input := rawJSON(map[string]any{"path": path, "content": ws.Content})
	if err := t.toolCall(acp.ToolCall{
		ToolCallId: id, Title: title, Kind: acp.ToolKindEdit, Status: acp.ToolCallPending,
		Content: diff, Locations: locs, RawInput: input, Name: "write",
	}); err != nil {
		return err
	}
	ask := ws.Ask == nil || *ws.Ask
	if m := t.s.currentMode(); m == modeAcceptEdits || m == modeAuto {
		ask = false // that is what the mode means
	}
	if ask {
		opt, err := t.askPermission(acp.ToolCallUpdate{
			ToolCallId: id, Title: acp.Ptr(title), Kind: acp.Ptr(acp.ToolKindEdit), Status: acp.Ptr(acp.ToolCallPending),
			Content: diff, Locations: locs, RawInput: input,
		}, standardOptions)
		if errors.Is(err, errCancelled) {
			return t.finishCancelled(id)
		}
		if err != nil {
			return err
		}
		if !allowed(opt) {
			if err := t.toolUpdate(id, acp.ToolCallFailed, nil, map[string]any{"rejected": true}); err != nil {
				return err
			}
			return t.say(fmt.Sprintf("Skipped writing %s: permission denied.\n\n", ws.Path))
		}
	}
	if err := t.toolUpdate(id, acp.ToolCallInProgress, nil, nil); err != nil {
		return err
	}
	err := t.call(acp.MethodFsWriteTextFile, acp.WriteTextFileRequest{SessionId: t.s.id, Path: path, Content: ws.Content}, nil)
	switch {
	case errors.Is(err, errCancelled):
		return t.finishCancelled(id)
	case clientError(err):
		if err := t.toolUpdate(id, acp.ToolCallFailed, []acp.ToolCallContent{diff[0], acp.ToolText("Write failed: " + errText(err))}, nil); err != nil {
			return err
		}
		return t.say(fmt.Sprintf("I couldn't write %s: %s\n\n", ws.Path, errText(err)))
	case err != nil:
		return err
	}
	return t.toolUpdate(id, acp.ToolCallCompleted, nil, map[string]any{"bytes": len(ws.Content)})
}

func (t *turn) run(rs *RunStep) error {
	line := render.ShellLine(rs.Command, rs.Args) // as tai shows it: one quoting of a command on a screen
	if !t.a.caps().Terminal {
		return t.say(fmt.Sprintf("I can't run `%s`: the client did not advertise the terminal capability.\n\n", line))
	}
	cwd := t.s.abs(".")
	if rs.Cwd != "" {
		cwd = t.s.abs(rs.Cwd)
	}
	limit := int64(rs.OutputLimit)
	if limit == 0 {
		limit = 64 << 10
	}
	req := acp.CreateTerminalRequest{
		SessionId: t.s.id, Command: rs.Command, Args: rs.Args, Cwd: acp.Ptr(cwd), OutputByteLimit: acp.Ptr(limit),
	}
	names := make([]string, 0, len(rs.Env))
	for k := range rs.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		req.Env = append(req.Env, acp.EnvVariable{Name: k, Value: rs.Env[k]})
	}

	id := t.s.nextID("run")
	title := "Run `" + line + "`"
	input := rawJSON(map[string]any{"command": rs.Command, "args": rs.Args, "cwd": cwd})
	if err := t.toolCall(acp.ToolCall{
		ToolCallId: id, Title: title, Kind: acp.ToolKindExecute, Status: acp.ToolCallPending,
		RawInput: input, Name: "run",
	}); err != nil {
		return err
	}
	if rs.Ask && t.s.currentMode() != modeAuto {
		opt, err := t.askPermission(acp.ToolCallUpdate{
			ToolCallId: id, Title: acp.Ptr(title), Kind: acp.Ptr(acp.ToolKindExecute), Status: acp.Ptr(acp.ToolCallPending),
			RawInput: input,
		}, standardOptions)
		if errors.Is(err, errCancelled) {
			return t.finishCancelled(id)
		}
		if err != nil {
			return err
		}
		if !allowed(opt) {
			if err := t.toolUpdate(id, acp.ToolCallFailed, nil, map[string]any{"rejected": true}); err != nil {
				return err
			}
			return t.say(fmt.Sprintf("Skipped running `%s`: permission denied.\n\n", line))
		}
	}

	var created acp.CreateTerminalResponse
	err := t.call(acp.MethodTerminalCreate, req, &created)
	switch {
	case errors.Is(err, errCancelled):
		return t.finishCancelled(id)
	case clientError(err):
		if err := t.toolUpdate(id, acp.ToolCallFailed, []acp.ToolCallContent{acp.ToolText("terminal/create failed: " + errText(err))}, nil); err != nil {
			return err
		}
		return t.say(fmt.Sprintf("I couldn't start `%s`: %s\n\n", line, errText(err)))
	case err != nil:
		return err
	}
	term := created.TerminalId
	termRef := acp.ToolTerminal(term)
	// Every created terminal is released, even after a cancel or failure,
	// on a context that outlives the turn.
	cleanup := func(kill bool) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), cleanupTimeout)
		defer cancel()
		ref := acp.KillTerminalRequest{SessionId: t.s.id, TerminalId: term}
		if kill {
			if err := t.a.conn.Call(ctx, acp.MethodTerminalKill, ref, nil); err != nil {
				t.a.log.Debug("builtin agent: terminal/kill", "err", err)
			}
		}
		if err := t.a.conn.Call(ctx, acp.MethodTerminalRelease, acp.ReleaseTerminalRequest{SessionId: t.s.id, TerminalId: term}, nil); err != nil {
			t.a.log.Debug("builtin agent: terminal/release", "err", err)
		}
	}
	if err := t.toolUpdate(id, acp.ToolCallInProgress, []acp.ToolCallContent{termRef}, nil); err != nil {
		cleanup(true)
		return err
	}

	var exit acp.WaitForTerminalExitResponse
	err = t.call(acp.MethodTerminalWaitForExit, acp.WaitForTerminalExitRequest{SessionId: t.s.id, TerminalId: term}, &exit)
	if err != nil {
		cleanup(true)
		switch {
		case errors.Is(err, errCancelled):
			return t.finishCancelled(id)
		case clientError(err):
			if err := t.toolUpdate(id, acp.ToolCallFailed, []acp.ToolCallContent{termRef, acp.ToolText("terminal/wait_for_exit failed: " + errText(err))}, nil); err != nil {
				return err
			}
			return t.say(fmt.Sprintf("`%s` failed: %s\n\n", line, errText(err)))
		}
		return err
	}
	var out acp.TerminalOutputResponse
	err = t.call(acp.MethodTerminalOutput, acp.TerminalOutputRequest{SessionId: t.s.id, TerminalId: term}, &out)
	cleanup(false)
	switch {
	case errors.Is(err, errCancelled):
		return t.finishCancelled(id)
	case clientError(err):
		out.Output = "(terminal/output failed: " + errText(err) + ")"
	case err != nil:
		return err
	}

	status, result := acp.ToolCallCompleted, "exited with code 0"
	switch {
	case exit.ExitCode != nil && *exit.ExitCode != 0:
		status, result = acp.ToolCallFailed, fmt.Sprintf("exited with code %d", *exit.ExitCode)
	case exit.ExitCode == nil && exit.Signal != nil:
		status, result = acp.ToolCallFailed, "was killed by "+*exit.Signal
	case exit.ExitCode == nil:
		status, result = acp.ToolCallFailed, "ended without an exit status"
	}
	raw := map[string]any{"exitCode": exit.ExitCode, "signal": exit.Signal, "truncated": out.Truncated}
	if err := t.toolUpdate(id, status, []acp.ToolCallContent{termRef, acp.ToolText(out.Output)}, raw); err != nil {
		return err
	}
	output := strings.TrimRight(out.Output, "\n")
	if out.Truncated {
		output = "…" + output
	}
	return t.say(fmt.Sprintf("`%s` %s:\n```\n%s\n```\n\n", line, result, output))
}

func (t *turn) permission(ps *PermissionStep) error {
	id := t.s.nextID("permission")
	kind := acp.ToolKind(ps.Kind)
	if kind == "" {
		kind = acp.ToolKindOther
	}
	call := acp.ToolCall{ToolCallId: id, Title: ps.Title, Kind: kind, Status: acp.ToolCallPending, Name: "permission"}
	if ps.Command != "" {
		call.RawInput, _ = json.Marshal(map[string]string{"command": ps.Command})
	}
	if ps.Path != "" {
		call.Locations = []acp.ToolCallLocation{{Path: t.s.abs(ps.Path)}}
	}
	if err := t.toolCall(call); err != nil {
		return err
	}
	opt, err := t.askPermission(acp.ToolCallUpdate{
		ToolCallId: id, Title: acp.Ptr(ps.Title), Kind: acp.Ptr(kind), Status: acp.Ptr(acp.ToolCallPending),
		RawInput: call.RawInput, Locations: call.Locations,
	}, standardOptions)
	if errors.Is(err, errCancelled) {
		return t.finishCancelled(id)
	}
	if err != nil {
		return err
	}
	if !allowed(opt) {
		if err := t.toolUpdate(id, acp.ToolCallFailed, nil, map[string]any{"optionId": opt.OptionId}); err != nil {
			return err
		}
		return t.say(fmt.Sprintf("Permission denied: %s.\n\n", ps.Title))
	}
	if err := t.toolUpdate(id, acp.ToolCallCompleted, nil, map[string]any{"optionId": opt.OptionId}); err != nil {
		return err
	}
	return t.say(fmt.Sprintf("Permission granted: %s (%s).\n\n", ps.Title, opt.OptionId))
}

// switchMode proposes a mode change the way agents "exit plan mode": a
// switch_mode tool call whose allow options are mode ids.
func (t *turn) switchMode(sm *SwitchModeStep) error {
	cur := t.s.currentMode()
	target, _ := modeByID(sm.To)
	curInfo, _ := modeByID(cur)
	title := "Switch to " + target.name + " mode"
	if cur == modePlan {
		title = "Exit plan mode: switch to " + target.name
	}
	options := []acp.PermissionOption{{OptionId: target.id, Name: "Yes, switch to " + target.name, Kind: acp.PermissionAllowOnce}}
	for _, m := range sessionModes {
		if m.id != target.id && m.id != cur && m.id != modeAuto { // auto only when asked for
			options = append(options, acp.PermissionOption{OptionId: m.id, Name: "Yes, switch to " + m.name, Kind: acp.PermissionAllowOnce})
		}
	}
	options = append(options, acp.PermissionOption{OptionId: OptionReject, Name: "No, stay in " + curInfo.name, Kind: acp.PermissionRejectOnce})

	id := t.s.nextID("mode")
	input := rawJSON(map[string]any{"from": cur, "to": target.id})
	if err := t.toolCall(acp.ToolCall{ToolCallId: id, Title: title, Kind: acp.ToolKindSwitchMode, Status: acp.ToolCallPending, RawInput: input, Name: "switch_mode"}); err != nil {
		return err
	}
	opt, err := t.askPermission(acp.ToolCallUpdate{
		ToolCallId: id, Title: acp.Ptr(title), Kind: acp.Ptr(acp.ToolKindSwitchMode), Status: acp.Ptr(acp.ToolCallPending), RawInput: input,
	}, options)
	if errors.Is(err, errCancelled) {
		return t.finishCancelled(id)
	}
	if err != nil {
		return err
	}
	if !allowed(opt) || !slices.Contains(modeIDs(), opt.OptionId) {
		if err := t.toolUpdate(id, acp.ToolCallFailed, nil, nil); err != nil {
			return err
		}
		return t.say(fmt.Sprintf("Staying in %s mode.\n\n", curInfo.name))
	}
	if err := t.a.switchMode(t.s, opt.OptionId, true); err != nil {
		return err
	}
	return t.toolUpdate(id, acp.ToolCallCompleted, nil, map[string]any{"mode": opt.OptionId})
}

// outside asks the client to read a path outside the workspace. A client
// that confines fs/* refuses; either way the outcome is reported.
func (t *turn) outside(st *OutsideStep) error {
	if !t.a.caps().Fs.ReadTextFile {
		return t.say(fmt.Sprintf("I can't try to read %s: the client did not advertise fs.readTextFile.\n\n", st.Path))
	}
	path := st.Path
	if !filepath.IsAbs(path) {
		path = t.s.abs(path)
	}
	id := t.s.nextID("read")
	if err := t.toolCall(acp.ToolCall{
		ToolCallId: id, Title: "Read " + path + " (outside the workspace)", Kind: acp.ToolKindRead, Status: acp.ToolCallInProgress,
		Locations: []acp.ToolCallLocation{{Path: path}}, RawInput: rawJSON(map[string]any{"path": path}), Name: "read",
	}); err != nil {
		return err
	}
	content, err := t.readFile(path, 0, 0)
	switch {
	case errors.Is(err, errCancelled):
		return t.finishCancelled(id)
	case clientError(err):
		if err := t.toolUpdate(id, acp.ToolCallFailed, []acp.ToolCallContent{acp.ToolText(errText(err))}, nil); err != nil {
			return err
		}
		return t.say(fmt.Sprintf("The client refused to read %s: %s\n\n", path, errText(err)))
	case err != nil:
		return err
	}
	if err := t.toolUpdate(id, acp.ToolCallCompleted, nil, map[string]any{"bytes": len(content)}); err != nil {
		return err
	}
	return t.say(fmt.Sprintf("Warning: the client let me read %s (%d bytes), which is outside the workspace.\n\n", path, len(content)))
}

// slash runs a "/name args" prompt.
func (t *turn) slash(prompt string) error {
	name, arg, _ := strings.Cut(strings.TrimPrefix(prompt, "/"), " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "echo":
		if arg == "" {
			return t.say("(nothing to echo)")
		}
		return t.say(arg)
	case "help":
		t.s.mu.Lock()
		cmds := append([]Command(nil), t.s.commands...)
		t.s.mu.Unlock()
		var b strings.Builder
		b.WriteString("Available commands:\n")
		for _, c := range cmds {
			b.WriteString("- /" + c.Name)
			if c.Hint != "" {
				b.WriteString(" <" + c.Hint + ">")
			}
			b.WriteString(": " + c.Description + "\n")
		}
		b.WriteString("Anything else plays the agent's script.")
		return t.say(b.String())
	case "plan", "mode":
		mode := modePlan
		if name == "mode" {
			mode = arg
		}
		m, ok := modeByID(mode)
		if !ok {
			return t.say(fmt.Sprintf("Unknown mode %q. Modes: %s.", mode, strings.Join(modeIDs(), ", ")))
		}
		if err := t.a.switchMode(t.s, m.id, true); err != nil {
			return err
		}
		return t.say(fmt.Sprintf("Switched to %s mode.", m.name))
	}
	return t.say(fmt.Sprintf("Unknown command /%s. Type /help for the available commands.", name))
}
