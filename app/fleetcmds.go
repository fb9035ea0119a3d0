package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/feed"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/internal/statedir"
)

// framesFile is where a fleet run keeps its stream-json frames, for
// `tai fleet logs`.
const framesFile = "frames.jsonl"

// FleetRunInfo is one row of `tai fleet list`.
type FleetRunInfo struct {
	Run     string         `json:"run"`
	Status  string         `json:"status"` // running | done | failed | interrupted | ...
	Live    bool           `json:"live"`   // its process is running (tai top sees it)
	Tasks   int            `json:"tasks"`
	Counts  map[string]int `json:"counts"`
	Tokens  int64          `json:"tokens"`
	Target  string         `json:"target"`
	Created time.Time      `json:"created"`
	Updated time.Time      `json:"updated"`
}

// fleetRuns reads every fleet run's state, newest first.
func fleetRuns() ([]FleetRunInfo, error) {
	dir := statedir.Dir("fleet")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing fleet runs: %w", err)
	}
	var out []FleetRunInfo
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		st, err := fleet.LoadState(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // a run that never saved its state
		}
		info := FleetRunInfo{Run: st.Run, Status: string(st.Status), Tasks: len(st.Order), Counts: map[string]int{}, Tokens: st.Usage.Tokens,
			Target: st.Target, Created: st.Created, Updated: st.Updated}
		if st.Status == fleet.RunRunning {
			info.Live = st.PID != 0 && alive(st.PID)
			if !info.Live {
				info.Status = string(fleet.RunInterrupted)
			}
		}
		for _, id := range st.Order {
			if t := st.Tasks[id]; t != nil {
				info.Counts[string(t.Status)]++
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].Run > out[j].Run
	})
	return out, nil
}

// FleetList runs `tai fleet list`.
func FleetList(asJSON bool, std IO) error {
	runs, err := fleetRuns()
	if err != nil {
		return err
	}
	return printRuns(std, runs, asJSON)
}

// printRuns prints runs as tai fleet list does.
func printRuns(std IO, runs []FleetRunInfo, asJSON bool) error {
	if asJSON {
		if runs == nil {
			runs = []FleetRunInfo{}
		}
		enc := json.NewEncoder(std.Out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(runs)
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintln(std.Err, "no fleet runs yet: tai fleet run PLAN.yaml")
		return nil
	}
	out, flush := fitTerminal(std) // one row a line on a narrow terminal
	fmt.Fprintf(out, "%-34s %-12s %5s  %-28s %8s  %s\n", "RUN", "STATUS", "TASKS", "COUNTS", "TOKENS", "CREATED")
	for _, r := range runs {
		var cs []string
		for k, v := range r.Counts {
			cs = append(cs, fmt.Sprintf("%d %s", v, k))
		}
		sort.Strings(cs)
		fmt.Fprintf(out, "%-34s %-12s %5d  %-28s %8d  %s\n", r.Run, r.Status, r.Tasks, strings.Join(cs, ", "), r.Tokens, r.Created.Local().Format("2006-01-02 15:04"))
	}
	return flush()
}

// latestFleetRun is the newest run, for `tai fleet status` without one.
func latestFleetRun() (string, error) {
	runs, err := fleetRuns()
	if err != nil {
		return "", err
	}
	if len(runs) == 0 {
		return "", exitcode.Usagef("no fleet runs yet: tai fleet run PLAN.yaml")
	}
	return runs[0].Run, nil
}

// FleetLogs runs `tai fleet logs [RUN] [TASK] [-f]`: the run's frames
// (one task's, with TASK), as lines or (-o json) as the frames
// themselves. -f follows a live run through its feed until it ends.
func FleetLogs(ctx context.Context, f FleetLogsFlags, run, task string, std IO) error {
	if f.NATS.URL != "" {
		return fleetLogsNATS(ctx, f, run, task, std)
	}
	if run == "" {
		r, err := latestFleetRun()
		if err != nil {
			return err
		}
		run = r
	}
	dir := fleet.RunDir(run)
	if _, err := fleet.LoadState(dir); err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	return fleetLogsFrom(ctx, f, run, dir, logShower(f, task, std), std)
}

// logShower prints a frame as tai fleet logs does (one task's, with task).
func logShower(f FleetLogsFlags, task string, std IO) func([]byte) {
	return func(data []byte) {
		var fr logFrame
		if json.Unmarshal(data, &fr) != nil || (task != "" && fr.Task != task) {
			return
		}
		if f.JSON {
			std.Out.Write(append(append([]byte(nil), data...), '\n'))
			return
		}
		if l := fr.line(); l != "" {
			fmt.Fprintln(std.Out, safetext.Line(l)) // titles, messages, details: the agents' words
		}
	}
}

// fleetLogsFrom prints a local run's frames, or follows its live feed.
func fleetLogsFrom(ctx context.Context, f FleetLogsFlags, run, dir string, show func([]byte), std IO) error {
	if f.Follow {
		if ep, ok := liveFeedOf(run); ok {
			c := feed.Dial(ep.Path)
			defer c.Close()
			_, err := c.Events(ctx, 0, func(ev feed.Event) error {
				if ev.Name == "" {
					show(ev.Data)
				}
				return nil
			})
			if err != nil && !errors.Is(err, feed.ErrEnded) && ctx.Err() == nil {
				return err
			}
			return nil
		}
	}
	fh, err := os.Open(filepath.Join(dir, framesFile))
	if err != nil {
		return fmt.Errorf("fleet run %s has no frames (a run from before tai kept them?): %w", run, err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		show(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return nil
}

func liveFeedOf(run string) (feed.Endpoint, bool) {
	eps, _ := feed.List(feed.DefaultDir())
	for _, ep := range eps {
		if ep.Run == run {
			return ep, true
		}
	}
	return feed.Endpoint{}, false
}

// logFrame is what fleet logs shows of a frame.
type logFrame struct {
	Type    string    `json:"type"`
	Task    string    `json:"task"`
	Ts      time.Time `json:"ts"`
	Event   string    `json:"event"`
	Detail  string    `json:"detail"`
	Message *struct {
		Role string `json:"role"`
		Text string `json:"text"`
	} `json:"message"`
	ToolCall *struct {
		Title  string `json:"title"`
		Status string `json:"status"`
	} `json:"tool_call"`
	Permission *struct {
		ToolCall struct {
			Title string `json:"title"`
		} `json:"tool_call"`
	} `json:"permission"`
	Decision *struct {
		Title     string `json:"title"`
		Verdict   string `json:"verdict"`
		DecidedBy string `json:"decided_by"`
		Via       string `json:"via"`
	} `json:"decision"`
	Turn *struct {
		StopReason string `json:"stop_reason"`
	} `json:"turn"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Status string `json:"status"`
}

func (f logFrame) line() string {
	who := f.Task
	if who == "" {
		who = "fleet"
	}
	var what string
	switch f.Type {
	case FleetEventFrameType:
		what = f.Event + " " + f.Detail
	case FleetResultFrameType:
		what = "result: " + f.Status
	case "message.chunk":
		if f.Message == nil || f.Message.Role != "agent" {
			return ""
		}
		what = "agent: " + strings.Join(strings.Fields(f.Message.Text), " ")
	case "tool_call":
		what = fmt.Sprintf("tool %s [%s]", f.ToolCall.Title, f.ToolCall.Status)
	case "permission.asked":
		what = "asks: " + f.Permission.ToolCall.Title
	case "permission.decided":
		by := f.Decision.DecidedBy
		if f.Decision.Via != "" {
			by += " via " + f.Decision.Via
		}
		what = fmt.Sprintf("%s %s (%s)", f.Decision.Verdict, f.Decision.Title, by)
	case "turn.ended":
		what = "turn ended: " + f.Turn.StopReason
	case "error":
		what = "error: " + f.Error.Message
	default:
		return ""
	}
	return fmt.Sprintf("%s %-12s %s", f.Ts.Local().Format("15:04:05"), who, strings.TrimSpace(what))
}
