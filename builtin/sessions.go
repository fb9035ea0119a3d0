package builtin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/tai-dev/tai/jsonrpc"
	"github.com/tai-dev/tai/protocol/acp"
)

// DefaultPageSize is how many sessions one session/list page holds.
const DefaultPageSize = 20

// allSessions are the live sessions and, with a state dir, those saved by
// earlier processes, most recently updated first.
func (a *agent) allSessions() []*session {
	a.mu.Lock()
	byID := make(map[string]*session, len(a.sessions))
	for id, s := range a.sessions {
		byID[id] = s
	}
	a.mu.Unlock()
	if dir := a.opts.StateDir; dir != "" {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			id, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || byID[id] != nil || !validID().MatchString(id) {
				continue
			}
			if s, err := a.loadSaved(id); err == nil {
				byID[id] = s
			}
		}
	}
	all := make([]*session, 0, len(byID))
	for _, s := range byID {
		all = append(all, s)
	}
	return sortSessions(all)
}

// listSessions answers session/list a page at a time. The cursor names the
// last session of the previous page, so a page boundary holds while
// sessions are added.
func (a *agent) listSessions(params json.RawMessage) (any, error) {
	var req acp.ListSessionsRequest
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &req); err != nil {
			return nil, invalidParams("invalid params: %v", err)
		}
	}
	var after string
	if req.Cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(req.Cursor)
		if err != nil || !validID().Match(b) {
			return nil, invalidParams("invalid cursor %q", req.Cursor)
		}
		after = string(b)
	}
	size := a.opts.PageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	resp := acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}
	started := after == ""
	for _, s := range a.allSessions() {
		info := s.info()
		if !started {
			started = info.SessionId == after
			continue
		}
		if req.Cwd != "" && info.Cwd != req.Cwd {
			continue
		}
		if len(resp.Sessions) == size {
			last := resp.Sessions[size-1].SessionId
			resp.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(last))
			break
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	if !started {
		return nil, invalidParams("cursor %q names no session (it was deleted): list again from the start", req.Cursor)
	}
	return resp, nil
}

// deleteSession answers session/delete: the session is gone, from memory
// and from the state dir.
func (a *agent) deleteSession(params json.RawMessage) (any, error) {
	var req acp.DeleteSessionRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	s, err := a.dropSession(req.SessionId)
	if err != nil {
		return nil, err
	}
	if a.opts.StateDir != "" {
		if err := os.Remove(filepath.Join(a.opts.StateDir, s.id+".json")); err != nil && !os.IsNotExist(err) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "deleting the saved session: " + err.Error()}
		}
	}
	return acp.DeleteSessionResponse{}, nil
}

// forkSession answers session/fork: a new session with a copy of the
// history, in the cwd asked for.
func (a *agent) forkSession(ctx context.Context, params json.RawMessage) (any, error) {
	sa, err := checkSessionArgs(params, true)
	if err != nil {
		return nil, err
	}
	var req acp.ForkSessionRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	src, err := a.mustSession(req.SessionId)
	if err != nil {
		return nil, err
	}
	s := newSession(newSessionID(), sa.Cwd, a.script)
	src.mu.Lock()
	s.mode, s.model, s.seq = src.mode, src.model, src.seq
	s.history = append([]historyEntry(nil), src.history...)
	if src.title != "" {
		s.title = truncate("Fork of "+src.title, 60)
	}
	src.mu.Unlock()
	s.addDirs = req.AdditionalDirectories
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	a.save(s)
	a.afterResponse(ctx, func() {
		if err := a.send(s, s.commandsUpdate()); err != nil {
			a.log.Debug("builtin agent: available commands", "err", err)
		}
	})
	return acp.ForkSessionResponse{SessionId: s.id, Modes: s.modeState(), ConfigOptions: s.configOptions()}, nil
}
