package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tai-dev/tai/exitcode"
	"github.com/tai-dev/tai/fleet"
	"github.com/tai-dev/tai/internal/safetext"
	"github.com/tai-dev/tai/remote"
)

// framesFile is where a fleet run keeps its stream-json frames, for
// `tai fleet logs`.
const framesFile = fleet.FramesFile

// FleetRunInfo is one row of `tai fleet list`.
type FleetRunInfo = fleet.RunInfo

// fleetStore is where fleet status, list and logs read runs: this host's
// state directory, or with --nats the NATS server's buckets and events
// stream. name is the command, as the server sees the connection.
func fleetStore(ctx context.Context, n NATSFlags, name string, std IO) (fleet.RunStore, func(), error) {
	if n.URL == "" {
		return fleet.FileStore{}, func() {}, nil
	}
	bus, closeBus, err := openBus(ctx, n, name, std)
	if err != nil {
		return nil, nil, err
	}
	return remote.Store{Bus: bus}, closeBus, nil
}

// latestRun is the store's newest run, for status and logs without one.
func latestRun(ctx context.Context, s fleet.RunStore, n NATSFlags) (string, error) {
	run, err := fleet.Latest(ctx, s)
	if errors.Is(err, fleet.ErrNoRuns) {
		if n.URL != "" {
			return "", exitcode.Usagef("no fleet runs on this NATS server")
		}
		return "", exitcode.Usagef("no fleet runs yet: tai fleet run PLAN.yaml")
	}
	return run, err
}

// FleetList runs `tai fleet list` (--nats: the runs on that server).
func FleetList(ctx context.Context, n NATSFlags, asJSON bool, std IO) error {
	s, closeStore, err := fleetStore(ctx, n, "tai fleet list", std)
	if err != nil {
		return err
	}
	defer closeStore()
	runs, err := s.Runs(ctx)
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

// FleetLogs runs `tai fleet logs [RUN] [TASK] [-f]`: the run's frames
// (one task's, with TASK), as lines or (-o json) as the frames
// themselves. -f follows a live run until it ends.
func FleetLogs(ctx context.Context, f FleetLogsFlags, run, task string, std IO) error {
	s, closeStore, err := fleetStore(ctx, f.NATS, "tai fleet logs", std)
	if err != nil {
		return err
	}
	defer closeStore()
	if run == "" {
		if run, err = latestRun(ctx, s, f.NATS); err != nil {
			return err
		}
	}
	if err := s.Frames(ctx, run, f.Follow, logShower(f, task, std)); err != nil {
		return fmt.Errorf("fleet logs: %w", err)
	}
	return nil
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
