package feed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
)

// Client talks to one run's feed.
type Client struct {
	// From is the address of the person this client answers for (tai
	// serve's browser): sent with every answer, for the run's audit log.
	From   string
	base   string
	token  string
	tokErr error // the feed secret could not be read: said with a refusal
	hc     *http.Client
}

// Dial returns a client of the feed at the Unix socket path, with the
// feed secret of its directory.
func Dial(path string) *Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	tok, err := readSecret(secretPath(filepath.Dir(path)))
	return &Client{base: "http://tai", token: tok, tokErr: err, hc: &http.Client{Transport: tr}}
}

// DialTCP returns a client of a feed served with --listen, at
// http://ADDR, with its token.
func DialTCP(addr, token string) *Client {
	return &Client{base: "http://" + addr, token: token, hc: &http.Client{}}
}

// Close releases the client's connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// ErrEnded: the run ended and its feed sent everything.
var ErrEnded = errors.New("the run's feed ended")

// StatusError is a refusal from the feed.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return fmt.Sprintf("feed: %d: %s", e.Code, e.Msg) }

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, hdr map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("feed: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		var e struct{ Error string }
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		if resp.StatusCode == http.StatusUnauthorized && c.tokErr != nil {
			e.Error += " (" + c.tokErr.Error() + ")"
		}
		return nil, &StatusError{Code: resp.StatusCode, Msg: e.Error}
	}
	return resp, nil
}

// State gets the run's snapshot.
func (c *Client) State(ctx context.Context) (State, error) {
	var st State
	resp, err := c.do(ctx, http.MethodGet, "/state", nil, nil)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("feed: /state: %w", err)
	}
	return st, nil
}

// Answer answers a pending ask: once, always, deny or never, via
// dashboard or feed.
func (c *Client) Answer(ctx context.Context, id, answer, via string) error {
	b, _ := json.Marshal(AnswerBody{Answer: answer, Via: via, Client: c.From})
	resp, err := c.do(ctx, http.MethodPost, "/asks/"+id, bytes.NewReader(b), map[string]string{"Content-Type": "application/json"})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Event is one SSE event of the feed.
type Event struct {
	ID   uint64 // 0 for gap and end
	Name string // "" for a frame; gap
	Data []byte
}

// Events streams the frames after lastID to fn until the run ends
// (ErrEnded), ctx ends, the connection drops, or fn fails. It returns the
// id of the last frame handed to fn (also if fn failed on it): pass it
// again to resume after it.
func (c *Client) Events(ctx context.Context, lastID uint64, fn func(Event) error) (uint64, error) {
	hdr := map[string]string{"Accept": "text/event-stream"}
	if lastID > 0 {
		hdr["Last-Event-ID"] = strconv.FormatUint(lastID, 10)
	}
	resp, err := c.do(ctx, http.MethodGet, "/events", nil, hdr)
	if err != nil {
		return lastID, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var ev Event
	var data [][]byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if data == nil && ev.Name == "" {
				continue
			}
			ev.Data = bytes.Join(data, []byte("\n"))
			if ev.Name == "end" {
				return lastID, ErrEnded
			}
			if ev.ID > 0 {
				lastID = ev.ID // handed over: a resume starts after it
			}
			if err := fn(ev); err != nil {
				return lastID, err
			}
			ev, data = Event{}, nil
			continue
		}
		field, val, _ := bytes.Cut(line, []byte(":"))
		val = bytes.TrimPrefix(val, []byte(" "))
		switch string(field) {
		case "id":
			n, err := strconv.ParseUint(string(val), 10, 64)
			if err != nil {
				return lastID, fmt.Errorf("feed: bad event id %q", val)
			}
			ev.ID = n
		case "event":
			ev.Name = string(val)
		case "data":
			data = append(data, append([]byte(nil), val...))
		}
	}
	if err := sc.Err(); err != nil {
		return lastID, fmt.Errorf("feed: events: %w", err)
	}
	return lastID, fmt.Errorf("feed: events: %w", io.ErrUnexpectedEOF)
}

// AnswerQuestion answers a pending question with text, via dashboard or
// feed.
func (c *Client) AnswerQuestion(ctx context.Context, id, text, via string) error {
	b, _ := json.Marshal(QuestionBody{Text: text, Via: via, Client: c.From})
	resp, err := c.do(ctx, http.MethodPost, "/questions/"+id, bytes.NewReader(b), map[string]string{"Content-Type": "application/json"})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// AnswerElicitation answers a pending elicitation: accept (with the form's
// values), decline or cancel, via dashboard or feed. An invalid form is a
// 400 whose message says what is wrong; the elicitation stays pending.
func (c *Client) AnswerElicitation(ctx context.Context, id, action string, content map[string]any, via string) error {
	b, err := json.Marshal(ElicitationBody{Action: action, Content: content, Via: via, Client: c.From})
	if err != nil {
		return fmt.Errorf("feed: %w", err)
	}
	resp, err := c.do(ctx, http.MethodPost, "/elicitations/"+id, bytes.NewReader(b), map[string]string{"Content-Type": "application/json"})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Cancel stops the run as an interrupt at its terminal would, via the
// client's channel.
func (c *Client) Cancel(ctx context.Context, via string) error {
	b, _ := json.Marshal(CancelBody{Via: via, Client: c.From})
	resp, err := c.do(ctx, http.MethodPost, "/cancel", bytes.NewReader(b), map[string]string{"Content-Type": "application/json"})
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
