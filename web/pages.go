package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/render"
	"github.com/tai-dev/tai/top"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// pageData is what a page shows.
type pageData struct {
	Title   string
	Now     time.Time
	CSRF    string
	Note    string
	Next    string // signin: where to go
	Runs    Runs
	Run     feed.State // the run page's
	Session string     // the run page's session
}

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"upper": strings.ToUpper,
	// safe shows an agent's text with its control and invisible characters
	// (bidi overrides, escapes) made visible; the template escapes the rest.
	"safe":    safetext.Text,
	"command": func(tc driver.ToolCall) string { c, _ := render.ShownCommand(tc); return c },
	"diff": func(q QueueItem) []string {
		var out []string
		for _, c := range q.Ask.Request.ToolCall.Content {
			if c.Type != "diff" {
				continue
			}
			if lines, err := render.UnifiedDiff(c, q.cwd); err == nil {
				if len(lines) > 400 {
					lines = append(lines[:400:400], fmt.Sprintf("… (%d more lines)", len(lines)-400))
				}
				out = append(out, lines...)
			}
		}
		return out
	},
	"diffClass": func(l string) string {
		switch {
		case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
			return "add"
		case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
			return "rm"
		}
		return ""
	},
	"itemID":     itemID,
	"fieldTitle": fieldTitle,
	"isTrue":     func(v any) bool { b, _ := v.(bool); return b },
	"enumName": func(f driver.ElicitField, i int) string {
		if i < len(f.EnumNames) && f.EnumNames[i] != "" {
			return f.EnumNames[i]
		}
		return f.Enum[i]
	},
	"inputType": func(f driver.ElicitField) string {
		switch {
		case f.Secret || f.Format == "password":
			return "password"
		case f.Type == "integer" || f.Type == "number":
			return "number"
		case f.Format == "email":
			return "email"
		case f.Format == "uri":
			return "url"
		case f.Format == "date":
			return "date"
		case f.Format == "date-time":
			return "datetime-local"
		}
		return "text"
	},
	"tokens": func(n int64) string {
		switch {
		case n < 1000:
			return fmt.Sprint(n)
		case n < 1000000:
			return fmt.Sprintf("%.1fk", float64(n)/1000)
		}
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	},
	// Filled in per page (the clock): placeholders for parsing.
	"age":        func(time.Time) string { return "" },
	"itemData":   func(pageData, QueueItem) any { return nil },
	"runData":    func(pageData, feed.State) any { return nil },
	"elicitData": func(itemData, *feed.Elicitation) any { return nil },
}).ParseFS(templateFS, "templates/*.html"))

// itemID is a queue item's anchor: a notification links to it.
func itemID(q QueueItem) string { return ItemAnchor(q.Run, q.ID) }

// ItemAnchor is the page's anchor of the item id of run: BASE/#ANCHOR
// shows it (notifications link there).
func ItemAnchor(run, id string) string { return "item-" + run + "-" + id }

type itemData struct {
	pageData
	Item QueueItem
}

type runData struct {
	pageData
	Run  feed.State
	Rows []top.Row
}

type elicitData struct {
	pageData
	Item QueueItem
	El   *feed.Elicitation
}

// page renders the named template.
func (s *Server) page(w http.ResponseWriter, code int, name string, d pageData) {
	now := s.o.Clock.Now()
	d.Now, d.CSRF = now, s.csrf
	if d.Title == "" {
		d.Title = "tai"
	}
	t, err := pages.Clone()
	if err == nil {
		t.Funcs(template.FuncMap{
			"age":        func(t time.Time) string { return age(now, t) },
			"itemData":   func(p pageData, q QueueItem) any { return itemData{p, q} },
			"runData":    func(p pageData, st feed.State) any { return runData{p, st, top.Rows([]feed.State{st})} },
			"elicitData": func(it itemData, el *feed.Elicitation) any { return elicitData{it.pageData, it.Item, el} },
		})
	}
	var b bytes.Buffer
	if err == nil {
		err = t.ExecuteTemplate(&b, name, d)
	}
	if err != nil {
		s.o.Logger.Error("web: rendering a page", "page", name, "err", err)
		httpError(w, http.StatusInternalServerError, "the page did not render: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// index is the page: the queue, then the runs. ?fragment=main is its main
// part alone, which the script fetches on each change.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	rs, err := s.runs(r.Context())
	d := pageData{Runs: rs, Note: r.URL.Query().Get("note")}
	if err != nil {
		d.Note = "the live feeds could not be read: " + err.Error()
	}
	if len(rs.Queue) > 0 {
		d.Title = fmt.Sprintf("(%d) tai", len(rs.Queue))
	}
	name := "index"
	if r.URL.Query().Get("fragment") == "main" {
		name = "main"
	}
	s.page(w, http.StatusOK, name, d)
}

// runPage is one run: its sessions and tasks, a session's transcript
// followed live, and its cancel button.
func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	c, err := s.client(r.PathValue("run"), r.RemoteAddr)
	if err != nil {
		s.notFound(w, r, err)
		return
	}
	defer c.Close()
	st, err := c.State(r.Context())
	if err != nil {
		s.notFound(w, r, err)
		return
	}
	d := pageData{Title: st.Run + " · tai", Run: st, Session: r.URL.Query().Get("session"), Note: r.URL.Query().Get("note")}
	if d.Session == "" && len(st.Sessions) > 0 {
		d.Session = st.Sessions[0].ID
	}
	s.page(w, http.StatusOK, "runpage", d)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, err error) {
	http.Redirect(w, r, "/?note="+urlQueryEscape(err.Error()), http.StatusSeeOther)
}

func urlQueryEscape(s string) string { return template.URLQueryEscaper(s) }

// serveAsset serves the script and the style.
func serveAsset(w http.ResponseWriter, r *http.Request) {
	name := path.Clean(strings.TrimPrefix(r.URL.Path, "/static/"))
	b, err := fs.ReadFile(assetFS, "assets/"+name)
	if err != nil || strings.Contains(name, "/") {
		httpError(w, http.StatusNotFound, "no such file")
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
