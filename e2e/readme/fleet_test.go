package readme_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// planRepo is a user's repository holding the shipped example
// builtin-dag as its plan.yaml (four tasks of the built-in agent, two in
// parallel, a join), committed: the README's `tai fleet run plan.yaml`
// then runs as written, from the repository (a plan's repository is its
// directory's).
func (u *user) planRepo(name string) string {
	u.t.Helper()
	repo := filepath.Join(u.home, name)
	ents, err := os.ReadDir(filepath.Join(examplesDir, "builtin-dag"))
	if err != nil {
		u.t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(examplesDir, "builtin-dag", e.Name()))
		if err != nil {
			u.t.Fatal(err)
		}
		writeFile(u.t, filepath.Join(repo, e.Name()), string(b))
	}
	return u.repo(name)
}

// dagFiles are the files its four tasks add, one each.
var dagFiles = []string{"greeting.go", "greeting_test.go", "docs/greeting.md", "CHANGELOG.md"}

// fleetRun is the run id a fleet command's output names (the target
// branch, tai-fleet/RUN, in the last line of its progress).
var fleetRunRe = regexp.MustCompile(`tai-fleet/(fleet-[0-9a-z-]+)`)

func fleetRun(t *testing.T, o outcome) string {
	t.Helper()
	m := fleetRunRe.FindStringSubmatch(o.stdout + o.stderr)
	if m == nil {
		t.Fatalf("the output does not name the run's branch tai-fleet/RUN:\n%s", o)
	}
	return m[1]
}

// landed checks that every task of the example landed on the run's
// target branch.
func (u *user) landed(repo, run string) {
	u.t.Helper()
	for _, f := range dagFiles {
		u.git(repo, "cat-file", "-e", "tai-fleet/"+run+":"+f)
	}
}

// The README's fleet commands, on the builtin-dag example, in a user's
// repository, from its directory (no -C).
func TestFleet(t *testing.T) {
	u := newUser(t)
	repo := u.planRepo("proj")
	o := u.must(repo, readme(`tai fleet run plan.yaml -j 4 --junit fleet.xml`))
	run := fleetRun(t, o)
	u.landed(repo, run)
	junit, err := os.ReadFile(filepath.Join(repo, "fleet.xml"))
	if err != nil || strings.Count(string(junit), "<testcase") != 4 || strings.Contains(string(junit), "<failure") {
		t.Errorf("fleet.xml: want 4 passing test cases (%v):\n%s", err, junit)
	}
	if head := u.git(repo, "rev-parse", "--abbrev-ref", "HEAD"); head != "main" {
		t.Errorf("the user's checkout moved to %s", head)
	}

	o = u.must(repo, readme(`tai fleet run -o stream-json plan.yaml`))
	var last map[string]any
	tasks := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(o.stdout))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var f map[string]any
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("a line of -o stream-json is not JSON (%v): %s", err, sc.Text())
		}
		if task, _ := f["task"].(string); task != "" {
			tasks[task] = true
		}
		last = f
	}
	if typ, _ := last["type"].(string); len(tasks) != 4 || !strings.HasSuffix(typ, "result") {
		t.Errorf("stream-json: want frames of 4 tasks and a result last, got tasks %v, last %v", tasks, last)
	}
	run2, _ := last["run"].(string)
	if run2 == "" || run2 == run {
		t.Errorf("the stream-json result names no new run: %v", last)
	} else {
		u.landed(repo, run2)
	}

	// status defaults to the latest run.
	o = u.must(repo, readme(`tai fleet list; tai fleet status [RUN]`), " [RUN]", "")
	if !strings.Contains(o.stdout, run) || !strings.Contains(o.stdout, run2) {
		t.Errorf("fleet list does not list both runs (%s, %s):\n%s", run, run2, o)
	}
	o = u.must(repo, readme(`tai fleet logs [RUN [TASK]] [-f]`), "[RUN [TASK]]", run+" api", "[-f]", "-f")
	if !strings.Contains(o.stdout, "api") {
		t.Errorf("fleet logs RUN api -f shows nothing of the task:\n%s", o)
	}
	tip := u.git(repo, "rev-parse", "tai-fleet/"+run)
	o = u.must(repo, readme(`tai fleet status RUN; tai fleet resume RUN`), "RUN", run)
	if !strings.Contains(o.stdout, run) {
		t.Errorf("fleet status RUN does not name the run:\n%s", o)
	}
	if now := u.git(repo, "rev-parse", "tai-fleet/"+run); now != tip {
		t.Errorf("resume of a finished run redid work: tai-fleet/%s moved from %s to %s", run, tip, now)
	}
	u.must(repo, readme(`tai worktree list; tai worktree gc --dry-run`))

	o = u.must(repo, readme(`tai audit show --task lint fleet-20261130-170000-ab12cd`), "lint", "api", "fleet-20261130-170000-ab12cd", run)
	if !strings.Contains(o.stdout, "file.write") || strings.Contains(o.stdout, "docs/greeting.md") {
		t.Errorf("audit show --task api: want the api task's write and none of the docs task's:\n%s", o)
	}
}

// The README's NATS commands: tai hub, a worker with its default --dir
// (issue 31: it used to land 0 of 5 tasks), a fleet run and resume
// through them, a hub coordinating on the existing server with a
// submitted run followed by status, logs and list from this host, and the
// coordinating hub on its own store.
func TestHubWorkerFleet(t *testing.T) {
	u := newUser(t)
	repo := u.planRepo("proj")
	// 127.0.0.1:0, not :4222: 4222 may be taken on the test machine; tai
	// hub prints the URL it got as its first line.
	hub := u.start(u.home, readme(`tai hub --listen 127.0.0.1:4222 --store ~/tai-hub`), "127.0.0.1:4222", "127.0.0.1:0")
	url := hub.Line(t)
	if !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Fatalf("tai hub's first line is not its URL: %q", url)
	}
	if _, err := os.Stat(filepath.Join(u.home, "tai-hub")); err != nil {
		t.Errorf("the hub's store is not in ~/tai-hub: %v", err)
	}
	worker := u.start(u.home, readme(`tai worker --nats nats://hub:4222 --slots 2 --agents claude,builtin`), "nats://hub:4222", url)

	o := u.must(repo, readme(`tai fleet run --nats nats://hub:4222 plan.yaml`), "nats://hub:4222", url)
	run := fleetRun(t, o)
	u.landed(repo, run)
	// The worker's default directory holds the tasks' audit logs.
	logs, _ := filepath.Glob(filepath.Join(u.home, ".local", "share", "tai", "worker", "*", "state", "audit", run, "*.jsonl"))
	if len(logs) != 4 {
		t.Errorf("want the 4 tasks' audit logs in the worker's default directory, got %v", logs)
	}
	tip := u.git(repo, "rev-parse", "tai-fleet/"+run)
	u.must(repo, readme(`tai fleet resume RUN --nats nats://hub:4222`), "RUN", run, "nats://hub:4222", url)
	if now := u.git(repo, "rev-parse", "tai-fleet/"+run); now != tip {
		t.Errorf("resume of a finished run redid work: %s → %s", tip, now)
	}

	coord := u.start(u.home, readme(`tai hub --coordinate --nats nats://cluster:4222`), "nats://cluster:4222", url)
	o = u.must(repo, readme(`tai fleet run --nats nats://hub:4222 --submit plan.yaml`), "nats://hub:4222", url)
	sub := fleetRun(t, o)
	u.landed(repo, sub)
	o = u.must(repo, readme(`tai fleet status RUN --nats nats://hub:4222`), "RUN", sub, "nats://hub:4222", url)
	if !strings.Contains(o.stdout, sub) {
		t.Errorf("fleet status --nats does not name %s:\n%s", sub, o)
	}
	o = u.must(repo, readme(`tai fleet logs RUN [TASK] --nats nats://hub:4222 -f`), "RUN", sub, "[TASK]", "api", "nats://hub:4222", url)
	if !strings.Contains(o.stdout, "api") {
		t.Errorf("fleet logs --nats RUN api -f shows nothing of the task:\n%s", o)
	}
	o = u.must(repo, readme(`tai fleet list --nats nats://hub:4222`), "nats://hub:4222", url)
	if !strings.Contains(o.stdout, sub) {
		t.Errorf("fleet list --nats does not list %s:\n%s", sub, o)
	}
	for name, d := range map[string]*daemon{"the coordinator": coord, "the worker": worker, "the hub": hub} {
		if err := d.Stop(); err != nil && !strings.Contains(err.Error(), "signal") && !strings.Contains(err.Error(), "exit status") {
			t.Errorf("%s did not stop on SIGTERM: %v\n%s", name, err, d.Stderr.String())
		}
	}

	// The coordinating hub on its own store listens where the README's
	// clients look, 127.0.0.1:4222, which another program may hold here.
	if l, err := net.Listen("tcp", "127.0.0.1:4222"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("127.0.0.1:4222 is taken on the CI machine: %v", err)
		}
		t.Skipf("127.0.0.1:4222 is taken here (%v): not running `tai hub --coordinate --store ~/tai-hub`", err)
	} else {
		l.Close()
	}
	hub2 := u.start(u.home, readme(`tai hub --coordinate --store ~/tai-hub`))
	if got := hub2.Line(t); got != "nats://127.0.0.1:4222" {
		t.Errorf("tai hub --coordinate: first line %q, want its URL nats://127.0.0.1:4222", got)
	}
	// It still has the first hub's runs: the store is the same.
	o = u.must(repo, "tai fleet list --nats nats://127.0.0.1:4222")
	if !strings.Contains(o.stdout, sub) {
		t.Errorf("the hub restarted on ~/tai-hub lost run %s:\n%s", sub, o)
	}
}

// The README's pause and release by hand, on a running fleet whose one
// task is parked at its account's usage limit (3h away, so only the
// release lets it go on): the README line pauses the fleet, then releases
// it, and the task resumes its own session and lands. Both hands are in
// the run's audit log, asked from the terminal.
func TestFleetPauseResume(t *testing.T) {
	u := newUser(t)
	repo := filepath.Join(u.home, "proj")
	resets := time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339)
	writeFile(t, filepath.Join(repo, "slow.yaml"), "steps:\n  - text: working\n  - limit: {resets_at: \""+resets+"\", times: 1}\n"+
		"  - write: {path: slow.txt, content: \"slow\\n\"}\n  - text: done\n")
	// policy approve: all, as the shipped example's: the task writes a
	// file, which the default approve-reads denies with nobody to ask.
	writeFile(t, filepath.Join(repo, "plan.yaml"), "name: parked\npolicy: {approve: all}\ntasks:\n  - {id: slow, script: slow.yaml, prompt: go}\n")
	u.repo("proj")
	fl := u.start(repo, "tai fleet run plan.yaml")
	for l := fl.Line(t); !strings.Contains(l, " parked "); l = fl.Line(t) {
	}
	st := u.must(repo, "tai fleet status -o json")
	var view struct {
		Run string `json:"run"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &view); err != nil || view.Run == "" {
		t.Fatalf("fleet status -o json names no run (%v):\n%s", err, st)
	}
	o := u.must(repo, readme(`tai fleet pause RUN; tai fleet resume RUN`), "RUN", view.Run)
	if !strings.Contains(o.stdout, "park at once") || !strings.Contains(o.stdout, "resume now") {
		t.Errorf("pause and resume did not say what they did:\n%s", o)
	}
	var rest strings.Builder
	for {
		l, err := fl.Stdout.ReadString('\n')
		rest.WriteString(l)
		if err != nil {
			break
		}
	}
	if err := fl.Wait(); err != nil {
		t.Fatalf("the released fleet: %v\n%s\n%s", err, rest.String(), fl.Stderr.String())
	}
	if got := u.git(repo, "show", "tai-fleet/"+view.Run+":slow.txt"); got != "slow" {
		t.Errorf("slow.txt on tai-fleet/%s: %q", view.Run, got)
	}
	a, err := os.ReadFile(u.state("fleet", view.Run, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var hands []string
	for _, l := range strings.Split(string(a), "\n") {
		var e struct {
			Kind string         `json:"kind"`
			Data map[string]any `json:"data"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Kind == "feed.hand" {
			hands = append(hands, fmt.Sprint(e.Data["action"], " via ", e.Data["via"]))
		}
	}
	if strings.Join(hands, ", ") != "pause via terminal, release via terminal" {
		t.Errorf("the run's audit log records hands %q, want the pause and the release via terminal", hands)
	}
}
