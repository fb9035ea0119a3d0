// Package web_test drives tai serve's page in a real browser (headless
// Chromium, through the DevTools protocol with chromedp) against real tai
// runs of the built-in agent under the default sandbox: a permission ask
// answered on a phone-sized page, a form filled in, a request without the
// token and a cross-site POST refused, and how long an ask takes to reach
// the page and an answer to reach the agent.
package web_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/creack/pty"

	"github.com/tai-dev/tai/audit"
	"github.com/tai-dev/tai/e2e/internal/auditlog"
	"github.com/tai-dev/tai/e2e/internal/build"
)

var taiBin, probeBin string

func TestMain(m *testing.M) {
	build.Main(m, "tai-e2e-web-", func(_ string, bins []string) { taiBin, probeBin = bins[0], bins[1] },
		build.Tai, "github.com/tai-dev/tai/e2e/internal/webprobe")
}

// readme marks a README command line that a test runs as written.
func readme(line string) string { return line }

// user is a user-like environment: a HOME of its own with XDG dirs, and a
// workspace. Every tai of a test shares it, as one user's would.
type user struct {
	root, home, ws string
	env            []string
}

func newUser(t *testing.T) *user {
	t.Helper()
	root := t.TempDir()
	u := &user{root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws")}
	for _, d := range []string{u.home, u.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	u.env = append(os.Environ(), "NO_COLOR=1", "HOME="+u.home, "XDG_RUNTIME_DIR="+filepath.Join(root, "rt"),
		"XDG_STATE_HOME="+filepath.Join(u.home, ".local", "state"), "XDG_CONFIG_HOME="+filepath.Join(u.home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(u.home, ".cache"), "XDG_DATA_HOME="+filepath.Join(u.home, ".local", "share"))
	return u
}

// serve starts tai serve with args and returns its link (with the token)
// and its base URL.
func (u *user) serve(t *testing.T, args ...string) (link, base string) {
	t.Helper()
	return u.page(t, append([]string{"serve"}, args...)...)
}

// page starts tai with args (tai serve, tai hub --serve) and returns the
// page's link and base URL, as it printed them.
func (u *user) page(t *testing.T, args ...string) (link, base string) {
	t.Helper()
	cmd := exec.Command(taiBin, args...)
	cmd.Dir, cmd.Env = u.ws, u.env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	})
	re := regexp.MustCompile(`open (https?://\S+)/\?token=(\S+) once`)
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return m[1] + "/?token=" + m[2], m[1]
		}
	}
	t.Fatalf("tai serve printed no link:\n%s", strings.Join(lines, "\n"))
	return "", ""
}

// run is a tai run of the built-in agent with script, at a terminal (the
// feed races the terminal for a human's answers only when the run has
// one), under the default sandbox.
type run struct {
	cmd    *exec.Cmd
	tty    *os.File
	screen *build.Buffer
	out    string
	done   chan struct{}
}

func (u *user) run(t *testing.T, script string, args ...string) *run {
	t.Helper()
	scr := filepath.Join(u.root, fmt.Sprintf("script-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(scr, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &run{out: filepath.Join(u.root, fmt.Sprintf("result-%d.json", time.Now().UnixNano())), screen: &build.Buffer{}, done: make(chan struct{})}
	full := append([]string{"run", "--agent-cmd", taiBin + " agent builtin --script " + scr, "-o", "json"}, args...)
	r.cmd = exec.Command(taiBin, append(full, "go")...)
	r.cmd.Dir, r.cmd.Env = u.ws, u.env
	resf, err := os.Create(r.out)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout = resf
	r.tty, err = pty.Start(r.cmd)
	resf.Close()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(r.screen, r.tty) }()
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		r.tty.Close()
	})
	return r
}

// result waits for the run to end and reads its JSON result.
func (r *run) result(t *testing.T) runResult {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not end; its terminal:\n%s", r.screen.String())
	}
	b, _ := os.ReadFile(r.out)
	var res runResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("the result %q: %v; terminal:\n%s", b, err, r.screen.String())
	}
	return res
}

type runResult struct {
	ExitCode    int    `json:"exit_code"`
	Message     string `json:"message"`
	Audit       string `json:"audit"`
	Permissions []struct {
		DecidedBy string `json:"decided_by"`
		Via       string `json:"via"`
		Verdict   string `json:"verdict"`
	}
}

// browser is a headless Chromium tab with a phone's viewport. Without
// chromium it skips, but fails in CI (CI=true), which installs it.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium on PATH: .ci/run installs Debian's")
		}
		t.Skip("no chromium on PATH (apt-get install chromium): the browser tests need one")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Headless, chromedp.DisableGPU,
		// Chromium's own sandbox needs user namespaces or a setuid helper
		// that a container running as root does not give it; the page
		// under test is ours, on loopback.
		chromedp.NoSandbox,
		chromedp.WindowSize(375, 812))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// A phone: 375x812 CSS pixels, touch.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// within runs the browser's steps with a bound: a page that never shows
// what is awaited fails the test rather than hanging it.
func within(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
		t.Fatalf("%s: %v\npage:\n%s", what, err, html)
	}
}

// screenshot keeps the page as a test artefact (go test -artifacts).
func screenshot(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	return png
}

// api calls the page's JSON API with the token as a bearer header.
func api(t *testing.T, base, token, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", path, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// waitQueue waits until the page's queue holds something, and returns the
// page's runs: it checks /api/runs again on each event of the page's
// stream (a frame of a run, a run started), so it never polls.
func waitQueue(t *testing.T, base, token string, r *run) apiRuns {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	go func() {
		select {
		case <-r.done: // a run that ended asks nothing more
			cancel()
		case <-ctx.Done():
		}
	}()
	events := bufio.NewReader(resp.Body)
	for {
		var runs apiRuns
		api(t, base, token, "/api/runs", &runs)
		if len(runs.Queue) > 0 {
			return runs
		}
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("nothing waits on the page (%v); the run's terminal:\n%s", err, r.screen.String())
			}
			if line == "\n" {
				break // one event read
			}
		}
	}
}

type apiRuns struct {
	Runs []struct {
		Run  string `json:"run"`
		Asks []struct {
			ID string `json:"id"`
		} `json:"asks"`
	} `json:"runs"`
	Queue []struct {
		Kind string `json:"kind"`
		Run  string `json:"run"`
		ID   string `json:"id"`
	} `json:"queue"`
}

func tokenOf(link string) string { return link[strings.Index(link, "?token=")+len("?token="):] }

const askScript = `steps:
  - permission: {title: "deploy <b>prod</b>", kind: execute, command: "make deploy"}
  - text: "deployed"
`

// A real tai run asks; the page, opened once with the link on a phone's
// viewport, shows the ask with its command; a tap on "Allow once" answers
// it: the run goes on and ends 0, its decision is the human's via web, and
// its audit log has the answer with the browser's address; its
// notification links to the ask on the page. tai serve is run as the
// README has it.
func TestAnswerAnAskFromAPhone(t *testing.T) {
	u := newUser(t)
	link, base := u.serve(t, strings.Fields(strings.TrimPrefix(readme(`tai serve`), "tai serve"))...)
	var mu sync.Mutex
	var notices []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		mu.Lock()
		notices = append(notices, req.Header.Get("Click")+" "+string(b))
		mu.Unlock()
	}))
	defer hook.Close()
	// --approve ask: the run must ask a human, so that the page has
	// something to answer; --notify-url: the notification's link is
	// checked.
	r := u.run(t, askScript, "--approve", "ask", "--notify-url", hook.URL)
	ctx := browser(t)
	within(t, ctx, "the ask on the page",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(`article.item.ask button[value="once"]`)),
	)
	html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html, "make deploy") || strings.Contains(html, "<b>prod</b>") || !strings.Contains(html, "&lt;b&gt;prod&lt;/b&gt;") {
		t.Fatalf("the ask is not shown escaped with its command:\n%s", html)
	}
	png := screenshot(t, ctx, "phone-ask.png")
	if dir := os.Getenv("TAI_WEB_SCREENSHOT_DIR"); dir != "" {
		// How docs/web-phone.png is made: TAI_WEB_SCREENSHOT_DIR=docs.
		if err := os.WriteFile(filepath.Join(dir, "web-phone.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	within(t, ctx, "answering", chromedp.Click(chromedp.CSS(`article.item.ask button[value="once"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#nothing`)))
	res := r.result(t)
	if res.ExitCode != 0 || !strings.Contains(res.Message, "deployed") {
		t.Fatalf("the run did not go on: exit %d, message %q\n%s", res.ExitCode, res.Message, r.screen.String())
	}
	if len(res.Permissions) != 1 || res.Permissions[0].DecidedBy != "human" || res.Permissions[0].Via != "web" {
		t.Fatalf("decisions %+v, want one by a human via web", res.Permissions)
	}
	if !strings.Contains(r.screen.String(), "answered via web") {
		t.Errorf("the terminal does not say the ask was answered via web:\n%s", r.screen.String())
	}
	entries := auditlog.Read(t, res.Audit)
	e, ok := auditlog.First(entries, audit.KindFeedAnswered)
	if !ok {
		t.Fatalf("no %s entry in %s", audit.KindFeedAnswered, res.Audit)
	}
	var a struct{ Via, Client, Answer string }
	if err := json.Unmarshal(e.Data, &a); err != nil || a.Via != "web" || !strings.HasPrefix(a.Client, "127.0.0.1:") || a.Answer != "once" {
		t.Fatalf("%s: %s", audit.KindFeedAnswered, e.Data)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("tai serve is not on loopback by default: %s", base)
	}
	mu.Lock()
	defer mu.Unlock()
	want := base + "/#item-" + e.Run + "-ask-1"
	if len(notices) == 0 || !strings.HasPrefix(notices[0], want+" ") || !strings.Contains(notices[0], `"link":"`+want+`"`) {
		t.Errorf("the notification does not link to the ask (%s): %q", want, notices)
	}
}

// A run's page follows its transcript live and cancels it: the run ends
// interrupted, and its audit log records the cancel via web.
func TestFollowAndCancelARun(t *testing.T) {
	u := newUser(t)
	link, base := u.serve(t, "--listen", "127.0.0.1:0")
	// --approve ask: the run waits on its ask while the page cancels it.
	r := u.run(t, askScript, "--approve", "ask")
	ctx := browser(t)
	within(t, ctx, "the ask on the page", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`article.item.ask`)))
	var runs apiRuns
	api(t, base, tokenOf(link), "/api/runs", &runs)
	if len(runs.Runs) != 1 {
		t.Fatalf("runs %+v", runs.Runs)
	}
	within(t, ctx, "the transcript", chromedp.Navigate(base+"/runs/"+runs.Runs[0].Run),
		chromedp.WaitVisible(chromedp.CSS(`#transcript div`)))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#transcript`)))
	if err != nil || !strings.Contains(text, "asks: deploy <b>prod</b>") {
		t.Fatalf("the transcript %q: %v", text, err)
	}
	screenshot(t, ctx, "phone-run.png")
	within(t, ctx, "cancelling", chromedp.Click(chromedp.CSS(`#cancel`)), chromedp.WaitVisible(chromedp.CSS(`body[data-page="index"]`)))
	res := r.result(t)
	if res.ExitCode != 130 {
		t.Fatalf("exit %d after a cancel, want 130 (interrupted)\n%s", res.ExitCode, r.screen.String())
	}
	e, ok := auditlog.First(auditlog.Read(t, res.Audit), audit.KindFeedCancel)
	if !ok || !strings.Contains(string(e.Data), `"via":"web"`) {
		t.Fatalf("no cancel via web in the audit log: %s", e.Data)
	}
}

// An agent's form (an elicitation) is filled in on the page: the agent
// gets the values typed, and the answer is the human's via web.
func TestFillAFormInTheBrowser(t *testing.T) {
	u := newUser(t)
	link, _ := u.serve(t, "--listen", "127.0.0.1:0")
	r := u.run(t, `steps:
  - elicit_form:
      message: "Which database?"
      schema:
        properties:
          database: {type: string, enum: [dev, prod], default: dev}
          replicas: {type: integer, minimum: 1, maximum: 5}
          confirm: {type: boolean}
        required: [database, replicas]
`)
	ctx := browser(t)
	within(t, ctx, "the form on the page",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(`article.item.elicitation select[name="f.database"]`)),
		chromedp.SetValue(chromedp.CSS(`select[name="f.database"]`), "prod"),
		chromedp.SendKeys(chromedp.CSS(`input[name="f.replicas"]`), "3"),
		chromedp.Click(chromedp.CSS(`input[name="f.confirm"]`)),
		chromedp.Focus(chromedp.CSS(`input[name="f.replicas"]`)),
	)
	// Another run comes and asks while the form is being filled (--approve
	// ask: it waits on its ask): the page refreshes around the form, which
	// keeps its values and its focus (a phone keeps its keyboard up).
	u.run(t, askScript, "--approve", "ask")
	within(t, ctx, "the other run's ask", chromedp.WaitVisible(chromedp.CSS(`article.item.ask`)))
	active, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.name + "=" + document.activeElement.value + " " + document.querySelector('select[name="f.database"]').value`))
	if err != nil || active != "f.replicas=3 prod" {
		t.Fatalf("after a refresh the focus and values are %q (%v), want the form as the user left it", active, err)
	}
	screenshot(t, ctx, "phone-form.png")
	within(t, ctx, "submitting", chromedp.Click(chromedp.CSS(`article.item.elicitation button[value="accept"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`article.item.elicitation`)))
	res := r.result(t)
	if res.ExitCode != 0 || !strings.Contains(res.Message, `database="prod"`) || !strings.Contains(res.Message, "replicas=3") || !strings.Contains(res.Message, "confirm=true") {
		t.Fatalf("the agent got %q (exit %d)\n%s", res.Message, res.ExitCode, r.screen.String())
	}
	e, ok := auditlog.First(auditlog.Read(t, res.Audit), audit.KindFeedAnswered)
	if !ok || !strings.Contains(string(e.Data), `"via":"web"`) || !strings.Contains(string(e.Data), `"answer":"accept"`) {
		t.Fatalf("no answer via web in the audit log: %s", e.Data)
	}
}

// Without the token the page and its API answer 401 (the browser sees the
// sign-in page); a POST from another origin, even with the cookie the
// browser holds, is refused, and the ask stays pending; tai serve records
// each refusal in its audit log.
func TestRefusedWithoutTokenOrCrossSite(t *testing.T) {
	u := newUser(t)
	link, base := u.serve(t, "--listen", "127.0.0.1:0")
	// --approve ask: an ask the forged POST tries to answer.
	r := u.run(t, askScript, "--approve", "ask")
	for _, p := range []string{"/", "/api/runs", "/api/events"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %s, want 401", p, resp.Status)
		}
	}
	ctx := browser(t)
	within(t, ctx, "the sign-in page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-page="login"]`)))

	// Signed in, the browser holds the cookie; another site's page (another
	// port of the same host: same site, another origin) posts an answer.
	within(t, ctx, "signing in", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`article.item.ask`)))
	var runs apiRuns
	api(t, base, tokenOf(link), "/api/runs", &runs)
	if len(runs.Queue) == 0 || runs.Queue[0].Kind != "ask" {
		t.Fatalf("queue %+v", runs.Queue)
	}
	target := fmt.Sprintf("%s/api/runs/%s/asks/%s", base, runs.Queue[0].Run, runs.Queue[0].ID)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form method="post" action="%s"><input name="answer" value="always"><input name="csrf" value="guessed"></form>`+
			`<script>document.forms[0].submit()</script>`, target)
	}))
	defer evil.Close()
	within(t, ctx, "the other site's page", chromedp.Navigate(evil.URL), chromedp.WaitVisible(chromedp.CSS(`body`)))
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "another site") {
		t.Errorf("the forged POST was not refused as cross-site: %q", body)
	}
	api(t, base, tokenOf(link), "/api/runs", &runs)
	if len(runs.Queue) == 0 || runs.Queue[0].Kind != "ask" {
		t.Fatalf("the forged POST answered the ask: queue %+v", runs.Queue)
	}
	// The ask is still the human's: answered on the page, the run ends.
	within(t, ctx, "answering", chromedp.Navigate(base+"/"), chromedp.Click(chromedp.CSS(`article.item.ask button[value="deny"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#nothing`)))
	if res := r.result(t); len(res.Permissions) != 1 || res.Permissions[0].Via != "web" || res.Permissions[0].Verdict != "deny" {
		t.Fatalf("decisions %+v", res.Permissions)
	}
	webLog := filepath.Join(u.home, ".local", "state", "tai", "audit", "web.jsonl")
	var reasons []string
	for _, e := range auditlog.Read(t, webLog) {
		if e.Kind == audit.KindWebRefused {
			reasons = append(reasons, string(e.Data))
		}
	}
	all := strings.Join(reasons, "\n")
	if !strings.Contains(all, "no valid token") || !strings.Contains(all, "cross-origin") {
		t.Fatalf("tai serve's audit log lacks the refusals:\n%s", all)
	}
}

// tai hub --serve serves the same page and API beside its NATS server:
// a live run on the hub's host is in its queue.
func TestHubServesThePage(t *testing.T) {
	if _, err := exec.LookPath("nats-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no nats-server on PATH: .ci/run installs Debian's")
		}
		t.Skip("no nats-server on PATH (apt-get install nats-server)")
	}
	u := newUser(t)
	link, base := u.page(t, "hub", "--listen", "127.0.0.1:0", "--store", filepath.Join(u.root, "store"), "--serve=127.0.0.1:0")
	// --approve ask: an ask for the hub's page to list.
	r := u.run(t, askScript, "--approve", "ask")
	runs := waitQueue(t, base, tokenOf(link), r)
	if runs.Queue[0].Kind != "ask" {
		t.Fatalf("queue %+v", runs.Queue)
	}
	if _, err := r.tty.Write([]byte("n")); err != nil {
		t.Fatal(err)
	}
	if res := r.result(t); len(res.Permissions) != 1 || res.Permissions[0].Via != "terminal" {
		t.Fatalf("decisions %+v", res.Permissions)
	}
}

// A hostile agent under the default sandbox cannot use the page: it cannot
// read the token file, and with the token leaked to it every request it
// makes (the API, the link, the cookie, an answer) is refused as coming
// from inside a sandbox, and recorded; the ask stays the human's.
func TestAgentCannotUseThePage(t *testing.T) {
	u := newUser(t)
	link, base := u.serve(t, "--listen", "127.0.0.1:0")
	// --approve ask: the victim's ask is what the probe tries to answer.
	victim := u.run(t, askScript, "--approve", "ask")
	runs := waitQueue(t, base, tokenOf(link), victim)
	report := filepath.Join(u.ws, "probe.json")
	tokenFile := filepath.Join(u.home, ".local", "state", "tai", "secrets", "web-token")
	script := fmt.Sprintf("steps:\n  - run: {command: %q, args: [%q, %q, %q, %q, %q]}\n  - text: \"probed\"\n",
		probeBin, report, tokenFile, base, tokenOf(link), runs.Queue[0].Run+"/"+runs.Queue[0].ID)
	// --approve all: the attacker's probe command must run.
	att := u.run(t, script, "--approve", "all")
	if res := att.result(t); res.ExitCode != 0 {
		t.Fatalf("the attacker's run: exit %d\n%s", res.ExitCode, att.screen.String())
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the probe left no report: %v\n%s", err, att.screen.String())
	}
	var pr struct {
		Token    string         `json:"token"`
		TokenErr string         `json:"token_err"`
		Requests map[string]int `json:"requests"`
	}
	if err := json.Unmarshal(b, &pr); err != nil {
		t.Fatal(err)
	}
	t.Logf("probe: %s", b)
	if pr.Token != "" || pr.TokenErr == "" {
		t.Errorf("the agent read the page's token file: %q", pr.Token)
	}
	if len(pr.Requests) != 4 {
		t.Fatalf("the probe did not try the page: %s", b)
	}
	for req, code := range pr.Requests {
		if code != http.StatusForbidden {
			t.Errorf("%s from inside the sandbox: %d, want 403", req, code)
		}
	}
	api(t, base, tokenOf(link), "/api/runs", &runs)
	if len(runs.Queue) == 0 || runs.Queue[0].Kind != "ask" {
		t.Fatalf("the probe answered the ask: queue %+v", runs.Queue)
	}
	if _, err := victim.tty.Write([]byte("n")); err != nil {
		t.Fatal(err)
	}
	if res := victim.result(t); len(res.Permissions) != 1 || res.Permissions[0].Via != "terminal" {
		t.Fatalf("victim decisions %+v", res.Permissions)
	}
	var inside int
	for _, e := range auditlog.Read(t, filepath.Join(u.home, ".local", "state", "tai", "audit", "web.jsonl")) {
		if e.Kind == audit.KindWebRefused && strings.Contains(string(e.Data), "inside an agent's sandbox") {
			inside++
		}
	}
	if inside < 4 {
		t.Errorf("tai serve's audit log has %d refusals from inside the sandbox, want 4", inside)
	}
}

// --tls-self-signed serves HTTPS with a certificate made at start, whose
// fingerprint tai serve prints; the cookie the link sets is Secure.
func TestSelfSignedTLS(t *testing.T) {
	u := newUser(t)
	link, base := u.serve(t, "--listen", "127.0.0.1:0", "--tls-self-signed")
	if !strings.HasPrefix(base, "https://127.0.0.1:") {
		t.Fatalf("base %s, want https", base)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // the certificate is made at start: the user checks its fingerprint
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ck := resp.Cookies(); resp.StatusCode != http.StatusOK || len(ck) != 1 || !ck[0].Secure || !ck[0].HttpOnly {
		t.Fatalf("the link over TLS: %s, cookies %+v", resp.Status, ck)
	}
	resp, err = c.Get(base + "/api/runs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token over TLS: %s", resp.Status)
	}
}
