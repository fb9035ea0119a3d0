package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
)

// claudeExitPlan is claude-agent-acp's ExitPlanMode request.
func claudeExitPlan() driver.PermissionRequest {
	return driver.PermissionRequest{ID: "7", Session: "s1", ToolCall: driver.ToolCall{ID: "tc", Kind: "switch_mode", Title: "Ready to code?",
		RawInput: rawJSON(map[string]string{"plan": "1. do it"})},
		Options: []driver.PermissionOption{
			{ID: "bypassPermissions", Name: "Yes, and bypass permissions", Kind: "allow_always"},
			{ID: "acceptEdits", Name: "Yes, and auto-accept edits", Kind: "allow_always"},
			{ID: "default", Name: "Yes, and manually approve edits", Kind: "allow_once"},
			{ID: "plan", Name: "No, keep planning", Kind: "reject_once"},
		}}
}

// builtinSwitch is tai's built-in agent's switch_mode request.
func builtinSwitch(from, to string) driver.PermissionRequest {
	return driver.PermissionRequest{ID: "8", Session: "s1", ToolCall: driver.ToolCall{ID: "mode-1", Kind: "switch_mode", Name: "switch_mode",
		Title: "Exit plan mode: switch to Accept edits", RawInput: rawJSON(map[string]string{"from": from, "to": to})},
		Options: []driver.PermissionOption{
			{ID: to, Name: "Yes, switch", Kind: "allow_once"},
			{ID: "default", Name: "Yes, switch to Default", Kind: "allow_once"},
			{ID: "reject", Name: "No, stay", Kind: "reject_once"},
		}}
}

func TestModeSwitch(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		flags      Flags
		prompter   Prompter
		req        driver.PermissionRequest
		wantVerd   string
		wantBy     driver.Provenance
		wantOption string
		wantNext   string
	}{
		{"leaving plan asks by default (headless: deny)", Config{}, Flags{}, nil, claudeExitPlan(), "deny", driver.ByDefault, "plan", ""},
		{"ask mode asks", Config{Mode: Ask}, Flags{}, nil, claudeExitPlan(), "deny", driver.ByDefault, "plan", ""},
		{"approve-all allows; never picks bypass", Config{Mode: ApproveAll}, Flags{}, nil, claudeExitPlan(), "allow", driver.ByDefault, "default", ""},
		{"mode_after_plan offered: chosen", Config{Mode: ApproveAll, ModeAfterPlan: "acceptEdits"}, Flags{}, nil, claudeExitPlan(), "allow", driver.ByDefault, "acceptEdits", ""},
		{"mode_after_plan not offered: runner moves", Config{Mode: ApproveAll, ModeAfterPlan: "dontAsk"}, Flags{}, nil, claudeExitPlan(), "allow", driver.ByDefault, "default", "dontAsk"},
		{"human approves, mode after plan", Config{ModeAfterPlan: "acceptEdits"}, Flags{}, &countingPrompter{ans: AllowOnce}, claudeExitPlan(), "allow", driver.ByHuman, "acceptEdits", ""},
		{"deny-all denies", Config{Mode: DenyAll}, Flags{}, nil, claudeExitPlan(), "deny", driver.ByDefault, "plan", ""},
		{"allow rule on the target mode", Config{ModeAfterPlan: "acceptEdits"}, Flags{Allow: []string{"switch_mode:acceptEdits"}}, nil, claudeExitPlan(), "allow", "rule:flag-1", "acceptEdits", ""},
		{"deny rule on the target mode beats approve-all", Config{Mode: ApproveAll}, Flags{Deny: []string{"switch_mode:accept*"}}, nil, builtinSwitch("plan", "accept-edits"), "deny", "rule:flag-1", "reject", ""},
		{"builtin: target from raw_input", Config{Mode: Yolo}, Flags{}, nil, builtinSwitch("plan", "accept-edits"), "allow", driver.ByDefault, "accept-edits", ""},
		{"builtin: mode_after_plan offered", Config{Mode: Yolo, ModeAfterPlan: "default"}, Flags{}, nil, builtinSwitch("plan", "accept-edits"), "allow", driver.ByDefault, "default", ""},
		{"entering plan restricts: allowed", Config{}, Flags{}, nil, builtinSwitch("default", "plan"), "allow", driver.ByDefault, "plan", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, tt.cfg, tt.flags, Options{Prompter: tt.prompter})
			d, err := e.Evaluate(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Verdict != tt.wantVerd || d.DecidedBy != tt.wantBy || d.OptionID != tt.wantOption || d.NextMode != tt.wantNext {
				t.Fatalf("got %s by %s option %q next %q (%s)", d.Verdict, d.DecidedBy, d.OptionID, d.NextMode, d.Reason)
			}
			if got := e.ModeAfterApproval(tt.req, d.PermissionDecision); got != tt.wantNext {
				t.Fatalf("ModeAfterApproval = %q, want %q", got, tt.wantNext)
			}
		})
	}
}

func TestPlanExitFromObservedMode(t *testing.T) {
	// No raw_input, no telling option: the session's observed mode says.
	req := driver.PermissionRequest{ID: "1", Session: "s", ToolCall: driver.ToolCall{Kind: "switch_mode", Title: "Start coding"},
		Options: []driver.PermissionOption{{ID: "code", Kind: "allow_once"}, {ID: "no", Kind: "reject_once"}}}
	e := engine(t, Config{Mode: ApproveAll, ModeAfterPlan: "acceptEdits"}, Flags{}, Options{})
	if d, _ := e.Evaluate(context.Background(), req); d.NextMode != "" {
		t.Fatalf("not in plan mode, yet NextMode %q", d.NextMode)
	}
	e.ObserveMode("s", "plan")
	if d, _ := e.Evaluate(context.Background(), req); d.NextMode != "acceptEdits" || d.OptionID != "code" {
		t.Fatalf("in plan mode: %+v", d)
	}
}

func TestCheckModeChange(t *testing.T) {
	ctx := context.Background()
	e := engine(t, Config{ModeAfterPlan: "acceptEdits"}, Flags{}, Options{})
	// The agent switched itself out of plan mode with nobody asked: headless deny.
	d, err := e.CheckModeChange(ctx, "s1", "plan", "bypassPermissions")
	if err != nil || d.Verdict != driver.VerdictDeny || d.DecidedBy != driver.ByDefault || d.OptionID != "reject" {
		t.Fatalf("unasked change: %+v %v", d, err)
	}
	// Into plan mode: allowed.
	if d, _ := e.CheckModeChange(ctx, "s1", "default", "plan"); d.Verdict != driver.VerdictAllow {
		t.Fatalf("into plan: %+v", d)
	}
	// tai's own change is expected.
	e.ExpectMode("s1", "default")
	if d, _ := e.CheckModeChange(ctx, "s1", "plan", "default"); d.Verdict != driver.VerdictAllow || !strings.Contains(d.Reason, "tai set") {
		t.Fatalf("expected change: %+v", d)
	}
	// A change that follows an approved switch_mode request is explained by it.
	ea := engine(t, Config{ModeAfterPlan: "acceptEdits"}, Flags{}, Options{Prompter: &countingPrompter{ans: AllowOnce}})
	if d, _ := ea.Evaluate(ctx, claudeExitPlan()); d.Verdict != driver.VerdictAllow {
		t.Fatalf("%+v", d)
	}
	d, _ = ea.CheckModeChange(ctx, "s1", "plan", "acceptEdits")
	if d.Verdict != driver.VerdictAllow || d.DecidedBy != driver.ByHuman || !strings.Contains(d.Reason, "approved request 7") {
		t.Fatalf("approved change: %+v", d)
	}
	// ...once.
	d, _ = ea.CheckModeChange(ctx, "s1", "default", "acceptEdits")
	if d.DecidedBy == driver.ByHuman && strings.Contains(d.Reason, "approved request") {
		t.Fatalf("approval reused: %+v", d)
	}
	// Rules apply to mode changes too.
	er := engine(t, Config{}, Flags{Allow: []string{"switch_mode:acceptEdits"}}, Options{})
	if d, _ := er.CheckModeChange(ctx, "s", "plan", "acceptEdits"); d.Verdict != driver.VerdictAllow || d.DecidedBy != "rule:flag-1" {
		t.Fatalf("rule: %+v", d)
	}
	// Headless fail.
	ef := engine(t, Config{NonInteractive: NonInteractiveFail}, Flags{}, Options{})
	if _, err := ef.CheckModeChange(ctx, "s", "plan", "code"); !errors.Is(err, ErrPromptUnavailable) {
		t.Fatalf("err = %v", err)
	}
}

func TestAnswerer(t *testing.T) {
	ws, home := testWS(t)
	human := &countingPrompter{ans: AllowOnce}
	judge := answererFunc(func(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
		switch Command(req.ToolCall) {
		case "make lint":
			return AllowAlways, nil
		case "make deploy":
			return DenyOnce, nil
		case "make broken":
			return AllowOnce, errors.New("model timed out")
		}
		return 0, ErrNoAnswer
	})
	e := engine(t, Config{}, Flags{}, Options{Workspace: ws, Home: home, Answerer: judge, Prompter: human})
	check(t, e, execReq("make lint"), want{"allow", driver.ByAnswerer})
	check(t, e, execReq("make lint"), want{"allow", driver.ByAnswerer}) // an answerer's always is not remembered
	check(t, e, execReq("make deploy"), want{"deny", driver.ByAnswerer})
	check(t, e, execReq("make broken"), want{"deny", driver.ByAnswerer}) // fails closed
	check(t, e, execReq("make other"), want{"allow", driver.ByHuman})    // abstained: the human
	check(t, e, execReq("rm -rf /"), want{"deny", "rule:floor-rm-root"})
	if human.asked.Load() != 1 {
		t.Fatalf("human asked %d times", human.asked.Load())
	}
}

type answererFunc func(ctx context.Context, req driver.PermissionRequest) (Answer, error)

func (f answererFunc) Ask(ctx context.Context, req driver.PermissionRequest) (Answer, error) {
	return f(ctx, req)
}

// The modes of the agents tai has presets for, as they describe them.
var (
	claudeModes = []driver.ModeInfo{
		{ID: "default", Name: "Manual", Description: "Always ask before making changes"},
		{ID: "acceptEdits", Name: "Accept edits", Description: "Automatically accept all file edits"},
		{ID: "plan", Name: "Plan", Description: "Create a plan before making changes"},
		{ID: "auto", Name: "Auto", Description: "Claude handles permission decisions"},
		{ID: "bypassPermissions", Name: "Bypass permissions", Description: "Accepts all permissions"},
	}
	codexModes = []driver.ModeInfo{
		{ID: "read-only", Name: "Read-only", Description: "Requires approval to edit files and access the internet."},
		{ID: "workspace-write", Name: "Workspace access", Description: "Edit workspace files; ask before writing outside the workspace or accessing the network."},
		{ID: "agent", Name: "Auto review", Description: "Only ask for actions detected as potentially unsafe"},
		{ID: "agent-full-access", Name: "Full access", Description: "Unrestricted access to the internet and any file on your computer"},
	}
	claudeRule = driver.ModeRule{SelfApproving: []string{"auto", "bypassPermissions"}, Asking: "default"}
	codexRule  = driver.ModeRule{SelfApproving: []string{"agent", "agent-full-access", "workspace-write"}, Asking: "read-only"}
)

func TestSelfApproving(t *testing.T) {
	tests := []struct {
		name  string
		modes []driver.ModeInfo
		rule  driver.ModeRule
		want  []string // the self-approving ids
		ask   string   // AskingMode; "" = none
	}{
		{"claude by its preset", claudeModes, claudeRule, []string{"auto", "bypassPermissions"}, "default"},
		// Without its preset, accepting all edits is approving them too.
		{"claude by the general rule", claudeModes, driver.ModeRule{}, []string{"acceptEdits", "auto", "bypassPermissions"}, "default"},
		{"codex by its preset", codexModes, codexRule, []string{"workspace-write", "agent", "agent-full-access"}, "read-only"},
		{"codex by the general rule", codexModes, driver.ModeRule{}, []string{"agent", "agent-full-access"}, "read-only"},
		{"gemini and qwen's yolo", []driver.ModeInfo{{ID: "default"}, {ID: "autoEdit"}, {ID: "yolo", Name: "YOLO"}}, driver.ModeRule{},
			[]string{"yolo"}, "default"},
		{"words in the description", []driver.ModeInfo{{ID: "careful", Description: "asks first"}, {ID: "trusting", Description: "Approves all tool calls"},
			{ID: "free", Description: "Runs without asking"}}, driver.ModeRule{}, []string{"trusting", "free"}, "careful"},
		{"no asking mode", []driver.ModeInfo{{ID: "agent"}, {ID: "plan"}}, driver.ModeRule{}, []string{"agent"}, ""},
		{"the preset's asking mode is never self-approving", []driver.ModeInfo{{ID: "auto-ask"}, {ID: "auto"}}, driver.ModeRule{Asking: "auto-ask"},
			[]string{"auto"}, "auto-ask"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range tt.modes {
				if SelfApproving(m, tt.rule) {
					got = append(got, m.ID)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("self-approving %v, want %v", got, tt.want)
			}
			ask, ok := AskingMode(tt.modes, tt.rule)
			if ask != tt.ask || ok != (tt.ask != "") {
				t.Errorf("AskingMode = %q %v, want %q", ask, ok, tt.ask)
			}
		})
	}
}

// A session's starting mode, and a move to a self-approving mode, are
// refused whatever --approve says, unless an allow rule names the mode.
func TestStartMode(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		cfg     Config
		flags   Flags
		mode    string
		verdict string
		by      driver.Provenance
	}{
		{"an asking mode needs no decision", Config{Mode: DenyAll}, Flags{}, "default", "allow", driver.ByDefault},
		{"auto refused under approve-all", Config{Mode: ApproveAll}, Flags{}, "auto", "deny", driver.ByDefault},
		{"auto refused under yolo", Config{Mode: Yolo}, Flags{}, "auto", "deny", driver.ByDefault},
		{"auto refused by default", Config{}, Flags{}, "auto", "deny", driver.ByDefault},
		{"an allow rule allows it", Config{}, Flags{Allow: []string{"switch_mode:auto"}}, "auto", "allow", "rule:flag-1"},
		{"an allow rule allows it under deny-all", Config{Mode: DenyAll}, Flags{Allow: []string{"switch_mode:auto"}}, "auto", "allow", "rule:flag-1"},
		{"an allow rule for another mode does not", Config{}, Flags{Allow: []string{"switch_mode:bypass*"}}, "auto", "deny", driver.ByDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, tt.cfg, tt.flags, Options{ModeRule: claudeRule})
			e.ObserveModes("s", claudeModes)
			d, err := e.CheckStartMode(ctx, "s", tt.mode)
			if err != nil || d.Verdict != tt.verdict || d.DecidedBy != tt.by {
				t.Fatalf("got %s by %s (%s), %v", d.Verdict, d.DecidedBy, d.Reason, err)
			}
			if d.Verdict == "deny" && d.DecidedBy == driver.ByDefault && tt.cfg.Mode != DenyAll && !strings.Contains(d.Reason, "--allow 'switch_mode:auto'") {
				t.Errorf("the reason does not name the rule that allows it: %s", d.Reason)
			}
			// The agent moving there itself is decided the same way.
			c, err := e.CheckModeChange(ctx, "s", "default", tt.mode)
			if err != nil || c.Verdict != tt.verdict {
				t.Fatalf("CheckModeChange: %s (%s), %v", c.Verdict, c.Reason, err)
			}
		})
	}
}

// A switch_mode request is never answered with a self-approving option,
// and one asking for such a mode is denied under approve-all.
func TestSwitchToSelfApproving(t *testing.T) {
	ctx := context.Background()
	e := engine(t, Config{Mode: ApproveAll}, Flags{}, Options{ModeRule: claudeRule})
	req := claudeExitPlan()
	req.Options = append([]driver.PermissionOption{{ID: "auto", Name: "Yes, and use auto mode", Kind: "allow_always"}}, req.Options...)
	d, err := e.Evaluate(ctx, req)
	if err != nil || d.Verdict != "allow" || d.OptionID != "default" {
		t.Fatalf("exit plan: %+v %v", d, err)
	}
	d, err = e.Evaluate(ctx, builtinSwitch("default", "auto"))
	if err != nil || d.Verdict != "deny" || d.OptionID != "reject" {
		t.Fatalf("switch to auto: %+v %v", d, err)
	}
}
