package feed

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/tai-dev/tai/redact"
)

// Refusal is a request the feed refused: from inside a sandbox, or
// without the secret. The run's audit log records each (OnRefuse).
type Refusal struct {
	Transport string `json:"transport"` // unix or tcp
	Peer      string `json:"peer,omitempty"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	Reason    string `json:"reason"`
}

// OnRefuse sets what hears of every refusal from now on (the run's audit
// log, opened after its feed). It must not block.
func (s *Server) OnRefuse(fn func(Refusal)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onRefuse = fn
}

// SetRedactor makes the feed redact what it serves as the run's audit log
// is redacted (the run's secrets are known once its agent is resolved,
// after the feed opened; until then the default patterns apply).
func (s *Server) SetRedactor(r *redact.Redactor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.red = r
}

func (s *Server) redactor() *redact.Redactor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.red
}

// peerKey carries a request's connection check in its context.
type peerKey struct{}

// peer is one connection's check, made on its first request: the pid
// that connected is alive then (it is mid-request), and the proc walk is
// off the accept loop.
type peer struct {
	c       net.Conn
	once    sync.Once
	in      bool
	why     string
	confine func(net.Conn) (bool, string)
}

func (p *peer) confined() (bool, string) {
	p.once.Do(func() { p.in, p.why = p.confine(p.c) })
	return p.in, p.why
}

func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, &peer{c: c, confine: s.o.Confined})
}

// guard admits a request only from outside every sandbox (the peer check)
// and with the secret: the user's feed secret on the socket, the token
// --listen printed on TCP. Each refusal is answered (403, 401), logged and
// recorded.
func (s *Server) guard(tcp bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref := Refusal{Transport: "unix", Method: r.Method, Path: r.URL.Path}
		if tcp {
			ref.Transport, ref.Peer = "tcp", r.RemoteAddr
		}
		p, _ := r.Context().Value(peerKey{}).(*peer)
		if p == nil {
			ref.Reason = "the connection is unknown"
		} else if in, why := p.confined(); in {
			ref.Reason = "from inside an agent's sandbox: " + why
		}
		if ref.Reason != "" {
			s.refuse(ref)
			httpError(w, http.StatusForbidden, "the feed answers no agent ("+ref.Reason+")")
			return
		}
		s.mu.Lock()
		want := s.secret
		if tcp {
			want = s.token
		}
		s.mu.Unlock()
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			ref.Reason = "no valid bearer token"
			s.refuse(ref)
			w.Header().Set("WWW-Authenticate", `Bearer realm="tai"`)
			msg := "a bearer token is needed: the one tai printed with --listen"
			if !tcp {
				msg = fmt.Sprintf("a bearer token is needed: the feed secret (%s/%s in the feed directory)", secretSub, TokenFile)
			}
			httpError(w, http.StatusUnauthorized, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) refuse(r Refusal) {
	s.refused.Add(1)
	s.o.Logger.Warn("feed: refused a request", "transport", r.Transport, "method", r.Method, "path", r.Path, "reason", r.Reason)
	s.mu.Lock()
	fn := s.onRefuse
	s.mu.Unlock()
	if fn != nil {
		fn(r)
	}
}

// redactFrame redacts a frame as the run's audit log is, but for the URL
// an elicit.opened frame asks the human to open: that is shown whole, as
// the terminal shows it (its query is often a device code the human must
// carry to the page), to the human alone.
func redactFrame(red *redact.Redactor, data []byte) []byte {
	out := red.Bytes(data)
	if bytes.Equal(out, data) || !bytes.Contains(data, []byte(`"`+FrameElicitOpened+`"`)) {
		return out
	}
	var orig, got ElicitFrame
	if json.Unmarshal(data, &orig) != nil || orig.Type != FrameElicitOpened || orig.Elicitation.Request.URL == "" ||
		json.Unmarshal(out, &got) != nil {
		return out
	}
	got.Elicitation.Request.URL = orig.Elicitation.Request.URL
	b, err := json.Marshal(got)
	if err != nil {
		return out
	}
	return b
}

// redactState is the snapshot's JSON redacted as the run's audit log is,
// the pending elicitations' URLs whole (see redactFrame).
func redactState(red *redact.Redactor, st State) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(st); err != nil {
		return nil, err
	}
	out := red.Bytes(b.Bytes())
	if bytes.Equal(out, b.Bytes()) || len(st.Elicitations) == 0 {
		return out, nil
	}
	var got State
	if json.Unmarshal(out, &got) != nil || len(got.Elicitations) != len(st.Elicitations) {
		return out, nil
	}
	for i, e := range st.Elicitations {
		got.Elicitations[i].Request.URL = e.Request.URL
	}
	b.Reset()
	if err := enc.Encode(got); err != nil {
		return out, nil
	}
	return b.Bytes(), nil
}
