package fleet_test

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tai-dev/tai/app"
)

func strictDecode(line string, v any) error {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// `tai fleet run -o stream-json`: every line decodes into the types cap.md
// §7 documents (the drift tests hold those to cap.md), with one seq for
// the whole stream and the result last; `fleet list`, `fleet status`
// (the latest run) and `fleet logs` read the same run.
func TestFleetStreamJSONAndLogs(t *testing.T) {
	repo := gitRepo(t)
	out, errOut, code := runTai(t, repo, "fleet", "run", "--run-id", "sj", "-C", repo, "-o", "stream-json", "--no-notify",
		filepath.Join(examplesDir(t), "builtin-dag", "plan.yaml"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var seq uint64
	tasks := map[string]bool{}
	types := map[string]int{}
	var last string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Text()
		var head struct {
			Type string
			Seq  uint64
		}
		if err := json.Unmarshal([]byte(line), &head); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		var err error
		switch head.Type {
		case app.FleetEventFrameType:
			var f app.FleetEventFrame
			err = strictDecode(line, &f)
		case app.FleetResultFrameType:
			var f app.FleetResultFrame
			err = strictDecode(line, &f)
			if err == nil && (f.Status != "done" || f.Counts["merged"] != 4) {
				t.Errorf("result %+v", f.Summary)
			}
		default:
			var f app.TaskFrame
			err = strictDecode(line, &f)
			if err == nil && (f.Run != "sj" || f.Task == "") {
				t.Errorf("an untagged task frame: %s", line)
			}
			tasks[f.Task] = true
		}
		if err != nil {
			t.Errorf("%v: %s", err, line)
		}
		if head.Seq != seq+1 {
			t.Errorf("seq %d after %d", head.Seq, seq)
		}
		seq = head.Seq
		types[head.Type]++
		last = head.Type
	}
	if last != app.FleetResultFrameType || types[app.FleetResultFrameType] != 1 || types[app.FleetEventFrameType] == 0 {
		t.Fatalf("frame types %v, last %s", types, last)
	}
	if len(tasks) != 4 || types["tool_call"] == 0 || types["permission.decided"] == 0 {
		t.Fatalf("task frames of %v; types %v", tasks, types)
	}

	list, _, code := runTai(t, repo, "fleet", "list", "-o", "json")
	var runs []app.FleetRunInfo
	if err := json.Unmarshal([]byte(list), &runs); err != nil || code != 0 || len(runs) != 1 || runs[0].Run != "sj" || runs[0].Counts["merged"] != 4 {
		t.Fatalf("fleet list: %v %+v\n%s", err, runs, list)
	}
	status, _, code := runTai(t, repo, "fleet", "status")
	if code != 0 || !strings.HasPrefix(status, "fleet sj: done") {
		t.Fatalf("fleet status (latest): %d\n%s", code, status)
	}
	logs, errOut, code := runTai(t, repo, "fleet", "logs", "sj", "api")
	if code != 0 || !strings.Contains(logs, "api") || !strings.Contains(logs, "agent: Added Greet in greeting.go.") || !strings.Contains(logs, "merged tai/sj/api") || strings.Contains(logs, " docs ") {
		t.Fatalf("fleet logs sj api: %d\n%s\n%s", code, logs, errOut)
	}
	raw, _, _ := runTai(t, repo, "fleet", "logs", "sj", "-o", "json")
	if n := strings.Count(raw, "\n"); n != strings.Count(out, "\n") {
		t.Fatalf("fleet logs -o json gave %d frames, the run streamed %d", n, strings.Count(out, "\n"))
	}
	if _, _, code := runTai(t, repo, "fleet", "logs", "nosuchrun"); code != 2 {
		t.Fatalf("fleet logs of no run: exit %d", code)
	}
}
