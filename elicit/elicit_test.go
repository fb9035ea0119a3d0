package elicit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
	"github.com/tai-dev/tai/policy"
)

func ptr[T any](v T) *T { return &v }

var form = driver.ElicitationRequest{ID: "1", Mode: driver.ElicitForm, Message: "Which database?", Fields: []driver.ElicitField{
	{Name: "database", Type: "string", Enum: []string{"dev", "prod"}, Required: true},
	{Name: "port", Type: "integer", Minimum: ptr(1.0), Maximum: ptr(65535.0), Required: true},
	{Name: "dry_run", Type: "boolean", Default: true},
	{Name: "tags", Type: "array", Enum: []string{"a", "b"}},
	{Name: "password", Type: "string", Secret: true},
}}

type fixed struct {
	ans driver.ElicitationAnswer
	err error
	n   int
}

func (f *fixed) Answer(context.Context, driver.ElicitationRequest) (driver.ElicitationAnswer, error) {
	f.n++
	return f.ans, f.err
}

func rules(t *testing.T, toml string) []policy.ElicitRule {
	t.Helper()
	c, err := policy.Parse("p.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	return c.Elicit
}

func TestChain(t *testing.T) {
	full := `[[elicit]]
id = "db"
message = "*database*"
[elicit.answers]
database = "prod"
port = 5432
`
	partial := `[[elicit]]
id = "half"
[elicit.answers]
database = "prod"
`
	accept := driver.ElicitationAnswer{Action: driver.ElicitAccept, Content: map[string]any{"database": "dev", "port": 80.0}}
	bad := driver.ElicitationAnswer{Action: driver.ElicitAccept, Content: map[string]any{"database": "nope", "port": 80.0}}
	tests := []struct {
		name    string
		rules   string
		links   []*fixed
		fail    bool
		req     driver.ElicitationRequest
		by      string
		action  driver.ElicitAction
		wantErr error
		asked   []int
	}{
		{name: "rule answers", rules: full, links: []*fixed{{ans: accept}}, req: form, by: "rule:db", action: driver.ElicitAccept, asked: []int{0}},
		{name: "rule lacking a required field passes", rules: partial, links: []*fixed{{ans: accept}}, req: form, by: "human", action: driver.ElicitAccept, asked: []int{1}},
		{name: "first link passes, second answers", links: []*fixed{{err: ErrPass}, {ans: accept}}, req: form, by: "parent", action: driver.ElicitAccept, asked: []int{1, 1}},
		{name: "invalid answer goes on", links: []*fixed{{ans: bad}, {err: ErrPass}}, req: form, by: ByDefault, action: driver.ElicitDecline, asked: []int{1, 1}},
		{name: "nobody: decline", links: []*fixed{{err: ErrPass}}, req: form, by: ByDefault, action: driver.ElicitDecline},
		{name: "nobody, fail: error", fail: true, req: form, by: ByCancel, action: driver.ElicitCancel, wantErr: ErrUnanswered},
		{name: "url without a url rule is not accepted by a message rule", rules: "[[elicit]]\nmessage = \"*\"\n",
			req: driver.ElicitationRequest{Mode: driver.ElicitURL, Message: "log in", URL: "https://x"}, by: ByDefault, action: driver.ElicitDecline},
		{name: "url rule", rules: "[[elicit]]\nid = \"u\"\nurl = \"https://auth.example.com/*\"\n",
			req: driver.ElicitationRequest{Mode: driver.ElicitURL, Message: "log in", URL: "https://auth.example.com/x"}, by: "rule:u", action: driver.ElicitAccept},
		{name: "decline rule", rules: "[[elicit]]\nid = \"no\"\naction = \"decline\"\n", req: form, by: "rule:no", action: driver.ElicitDecline},
	}
	names := []string{ByHuman, ByParent}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Chain{Fail: tc.fail}
			if tc.rules != "" {
				c.Rules = rules(t, tc.rules)
			}
			for i, l := range tc.links {
				c.Links = append(c.Links, Link{By: names[i], A: l})
			}
			ans, err := c.Elicit(context.Background(), tc.req)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if ans.DecidedBy != tc.by || ans.Action != tc.action {
				t.Fatalf("answer %+v, want %s by %s", ans, tc.action, tc.by)
			}
			for i, n := range tc.asked {
				if tc.links[i].n != n {
					t.Errorf("link %d asked %d times, want %d", i, tc.links[i].n, n)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		content map[string]any
		err     string
		want    map[string]any
	}{
		{map[string]any{"database": "dev", "port": 5432.0}, "", map[string]any{"database": "dev", "port": int64(5432), "dry_run": true}},
		{map[string]any{"database": "dev"}, "port is required", nil},
		{map[string]any{"database": "x", "port": 1.0}, `"x" is not one of dev, prod`, nil},
		{map[string]any{"database": "dev", "port": 1.5}, "not a whole number", nil},
		{map[string]any{"database": "dev", "port": 70000.0}, "above the maximum", nil},
		{map[string]any{"database": "dev", "port": 1.0, "tags": []any{"a", "c"}}, `"c" is not one of a, b`, nil},
		{map[string]any{"database": "dev", "port": 1.0, "dry_run": "yes"}, "want true or false", nil},
	}
	for _, tc := range tests {
		got, err := Validate(form, tc.content)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.content, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.content, err)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s = %#v, want %#v", k, got[k], v)
			}
		}
	}
}

func TestRedacted(t *testing.T) {
	ans := driver.ElicitationAnswer{Action: driver.ElicitAccept, Content: map[string]any{"database": "dev", "password": "hunter2", "api_token": "t0k"}}
	r := ans.RedactedFor(form)
	if r.Content["password"] != driver.RedactedValue || r.Content["api_token"] != driver.RedactedValue || r.Content["database"] != "dev" {
		t.Fatalf("redacted %+v", r.Content)
	}
	if ans.Content["password"] != "hunter2" {
		t.Fatal("the original answer was changed")
	}
	if strings.Join(r.Redacted, ",") != "api_token,password" {
		t.Fatalf("redacted names %v", r.Redacted)
	}
}

func TestForm(t *testing.T) {
	in := strings.NewReader("prod\nabc\n8080\n\n2,1\nsecret\ny\n")
	var out strings.Builder
	f := &Form{In: in, Out: &out}
	ans, err := f.Answer(context.Background(), form)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Action != driver.ElicitAccept || ans.Content["database"] != "prod" || ans.Content["port"] != int64(8080) ||
		ans.Content["dry_run"] != true || strings.Join(ans.Content["tags"].([]string), ",") != "b,a" || ans.Content["password"] != "secret" {
		t.Fatalf("answer %+v", ans)
	}
	if !strings.Contains(out.String(), `"abc" is not a number`) || !strings.Contains(out.String(), "1) dev") {
		t.Fatalf("form output:\n%s", out.String())
	}
	// EOF mid-form cancels.
	ans, _ = (&Form{In: strings.NewReader("dev\n"), Out: &out}).Answer(context.Background(), form)
	if ans.Action != driver.ElicitCancel {
		t.Fatalf("EOF: %+v", ans)
	}
	// A URL is opened only when the user says so.
	opened := ""
	url := driver.ElicitationRequest{Mode: driver.ElicitURL, Message: "log in", URL: "https://auth.example.com/x"}
	ans, _ = (&Form{In: strings.NewReader("n\n"), Out: &out, Open: func(u string) error { opened = u; return nil }}).Answer(context.Background(), url)
	if ans.Action != driver.ElicitDecline || opened != "" {
		t.Fatalf("declined url: %+v opened %q", ans, opened)
	}
	ans, _ = (&Form{In: strings.NewReader("o\n"), Out: &out, Open: func(u string) error { opened = u; return nil }}).Answer(context.Background(), url)
	if ans.Action != driver.ElicitAccept || opened != url.URL {
		t.Fatalf("opened url: %+v opened %q", ans, opened)
	}
}

func TestCheckStringFormats(t *testing.T) {
	for _, tc := range []struct {
		format, value string
		ok            bool
	}{
		{"date", "2026-12-07", true},
		{"date", "2026-02-30", false},
		{"date", "2026-13-01", false},
		{"date", "07/12/2026", false},
		{"date-time", "2026-12-07T09:30:00Z", true},
		{"date-time", "2026-12-07t09:30:00.125+01:00", true},
		{"date-time", "2026-12-07 09:30:00Z", false},
		{"date-time", "2026-12-07", false},
		{"date-time", "2026-12-07T25:00:00Z", false},
		{"date-time", "tomorrow", false},
		{"email", "a@example.com", true},
		{"email", "not an address", false},
		{"uri", "https://example.com/x", true},
		{"uri", "example", false},
	} {
		err := checkString(driver.ElicitField{Format: tc.format}, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("%s %q: err = %v, want ok = %v", tc.format, tc.value, err, tc.ok)
		}
	}
}

// A form shows the agent's strings escaped, and answers with its values
// as they are: what is checked and sent is the request, not what is shown.
func TestFormEscapesWhatItShows(t *testing.T) {
	req := driver.ElicitationRequest{Mode: driver.ElicitForm, Message: "Deploy?\x1b[2K\x1b[1A",
		Fields: []driver.ElicitField{{Name: "env\u202e", Title: "Target\x1b[8D", Description: "where\u2066", Type: "string", Enum: []string{"prod\x1b[K", "dev"}, Required: true}}}
	var out strings.Builder
	ans, err := (&Form{In: strings.NewReader("1\ny\n"), Out: &out}).Answer(context.Background(), req)
	if err != nil || ans.Action != driver.ElicitAccept || ans.Content["env\u202e"] != "prod\x1b[K" {
		t.Fatalf("answer %+v, %v", ans, err)
	}
	screen := out.String()
	for _, want := range []string{`Deploy?\x1b[2K\x1b[1A`, `Target\x1b[8D`, `where\u2066`, `1) prod\x1b[K`} {
		if !strings.Contains(screen, want) {
			t.Errorf("the form lacks %q:\n%s", want, screen)
		}
	}
	if strings.ContainsAny(screen, "\x1b\u202e\u2066") {
		t.Fatalf("a control or bidi character reaches the terminal:\n%q", screen)
	}
	url := driver.ElicitationRequest{Mode: driver.ElicitURL, Message: "log in\u202e", URL: "https://a.example/\x1b]8;;x"}
	out.Reset()
	_, _ = (&Form{In: strings.NewReader("n\n"), Out: &out}).Answer(context.Background(), url)
	if s := out.String(); strings.ContainsAny(s, "\x1b\u202e") || !strings.Contains(s, `https://a.example/\x1b]8;;x`) {
		t.Fatalf("url form:\n%q", s)
	}
}
