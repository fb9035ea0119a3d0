package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tai-dev/tai/ask"
	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/feed"
)

// The answers take the feed's JSON bodies (cap.md §7) or the page's
// forms; either way they go to the run's feed as via web, with the
// browser's address. A form is answered with a redirect to the page (a
// note if the answer was refused: already answered via the terminal, a
// form not valid); JSON with the feed's JSON.

func (s *Server) postAsk(w http.ResponseWriter, r *http.Request) {
	var body feed.AnswerBody
	if !s.decode(w, r, &body, func(f url.Values) { body.Answer = f.Get("answer") }) {
		return
	}
	s.act(w, r, func(ctx context.Context, c *feed.Client) error {
		return c.Answer(ctx, r.PathValue("id"), body.Answer, string(ask.ViaWeb))
	}, map[string]string{"id": r.PathValue("id"), "answer": body.Answer, "via": string(ask.ViaWeb)})
}

func (s *Server) postQuestion(w http.ResponseWriter, r *http.Request) {
	var body feed.QuestionBody
	if !s.decode(w, r, &body, func(f url.Values) { body.Text = f.Get("text") }) {
		return
	}
	s.act(w, r, func(ctx context.Context, c *feed.Client) error {
		return c.AnswerQuestion(ctx, r.PathValue("id"), body.Text, string(ask.ViaWeb))
	}, map[string]string{"id": r.PathValue("id"), "via": string(ask.ViaWeb)})
}

func (s *Server) postElicitation(w http.ResponseWriter, r *http.Request) {
	var body feed.ElicitationBody
	run, id := r.PathValue("run"), r.PathValue("id")
	var form url.Values
	if !s.decode(w, r, &body, func(f url.Values) { body.Action, form = f.Get("action"), f }) {
		return
	}
	s.act(w, r, func(ctx context.Context, c *feed.Client) error {
		if form != nil && body.Action == string(driver.ElicitAccept) {
			// The form's strings, typed as the request's fields say.
			st, err := c.State(ctx)
			if err != nil {
				return err
			}
			el := findElicitation(st, id)
			if el == nil {
				return &feed.StatusError{Code: http.StatusConflict, Msg: fmt.Sprintf("elicitation %s of run %s is no longer pending", id, run)}
			}
			if body.Content, err = formContent(el.Request, form); err != nil {
				return &feed.StatusError{Code: http.StatusBadRequest, Msg: err.Error()}
			}
		}
		return c.AnswerElicitation(ctx, id, body.Action, body.Content, string(ask.ViaWeb))
	}, map[string]string{"id": id, "action": body.Action, "via": string(ask.ViaWeb)})
}

func (s *Server) postCancel(w http.ResponseWriter, r *http.Request) {
	if !s.decode(w, r, &feed.CancelBody{}, nil) {
		return
	}
	s.act(w, r, func(ctx context.Context, c *feed.Client) error { return c.Cancel(ctx, string(ask.ViaWeb)) },
		map[string]string{"cancelled": r.PathValue("run"), "via": string(ask.ViaWeb)})
}

// postHand pauses (HandPause) or releases (HandRelease) a fleet through
// its feed, as tai fleet pause and resume do; the fleet's audit log
// records it (feed.hand) as via web with the browser's address.
func (s *Server) postHand(action feed.HandAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.decode(w, r, &feed.CancelBody{}, nil) {
			return
		}
		s.act(w, r, func(ctx context.Context, c *feed.Client) error { return c.Hand(ctx, action, string(ask.ViaWeb)) },
			map[string]string{string(action): r.PathValue("run"), "via": string(ask.ViaWeb)})
	}
}

// decode reads a POST's body: JSON into v, or a form through fromForm.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, fromForm func(url.Values)) bool {
	if isForm(r) {
		if err := r.ParseForm(); err != nil {
			httpError(w, http.StatusBadRequest, "the form does not parse: "+err.Error())
			return false
		}
		if fromForm != nil {
			fromForm(r.PostForm)
		}
		return true
	}
	if r.ContentLength == 0 {
		return true
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(v); err != nil {
		httpError(w, http.StatusBadRequest, "the body must be JSON (cap.md §7) or a form: "+err.Error())
		return false
	}
	return true
}

// act does fn on the run's feed and answers.
func (s *Server) act(w http.ResponseWriter, r *http.Request, fn func(context.Context, *feed.Client) error, ok map[string]string) {
	c, err := s.client(r.PathValue("run"), r.RemoteAddr)
	if err == nil {
		defer c.Close()
		err = fn(r.Context(), c)
	}
	s.done(w, r, err, ok)
}

// done answers a POST: JSON, or for a form a redirect back to the page,
// with a note saying why it was refused.
func (s *Server) done(w http.ResponseWriter, r *http.Request, err error, ok map[string]string) {
	if !isForm(r) {
		if err != nil {
			feedError(w, err)
			return
		}
		writeJSON(w, ok)
		return
	}
	back := "/"
	if ret := r.PostFormValue("return"); strings.HasPrefix(ret, "/") && !strings.HasPrefix(ret, "//") && !strings.Contains(ret, `\`) {
		back = ret
	}
	if err != nil {
		msg := err.Error()
		var se *feed.StatusError
		if errors.As(err, &se) {
			msg = se.Msg
		}
		u, _ := url.Parse(back)
		q := u.Query()
		q.Set("note", msg)
		u.RawQuery = q.Encode()
		back = u.String()
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

func findElicitation(st feed.State, id string) *feed.Elicitation {
	for i := range st.Elicitations {
		if st.Elicitations[i].ID == id {
			return &st.Elicitations[i]
		}
	}
	return nil
}

// formContent reads a form's fields ("f.NAME") as the request's fields
// type them; the feed checks the values (bounds, patterns, required).
func formContent(req driver.ElicitationRequest, f url.Values) (map[string]any, error) {
	out := map[string]any{}
	for _, fd := range req.Fields {
		key := "f." + fd.Name
		vals, given := f[key]
		switch fd.Type {
		case "boolean":
			out[fd.Name] = given && len(vals) > 0 && vals[0] != "" && vals[0] != "false"
			continue
		case "array":
			if given {
				out[fd.Name] = vals
			}
			continue
		}
		v := strings.TrimSpace(f.Get(key))
		if v == "" {
			continue // the feed fills in a default, or says it is required
		}
		switch fd.Type {
		case "integer":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a whole number", fieldTitle(fd), v)
			}
			out[fd.Name] = n
		case "number":
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a number", fieldTitle(fd), v)
			}
			out[fd.Name] = n
		default:
			out[fd.Name] = f.Get(key) // a string as typed
		}
	}
	return out, nil
}

func fieldTitle(fd driver.ElicitField) string {
	if fd.Title != "" {
		return fd.Title
	}
	return fd.Name
}
