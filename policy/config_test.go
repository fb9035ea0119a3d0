package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tai-dev/tai/driver"
)

// fullExample is the example of the package documentation.
const fullExample = `version = 1
mode = "approve-reads"           # approve-all | approve-reads | ask | deny-all | yolo
non_interactive = "deny"         # deny | fail: what an ask becomes with no terminal
remember = "run"                 # session | run | workspace: how far "always" reaches
default_mode = "plan"            # the session's starting mode (tai run --mode overrides)
mode_after_plan = "acceptEdits"  # where an approved exit from plan mode goes
protected_branches = ["main", "master", "release/*"]
write_roots = ["/tmp/scratch"]   # writes there are not "outside the workspace"
# floor = false                  # turns the built-in floor off: only here, never by a flag
# floor_disable = ["floor-git-force-push"]

[[rule]]
id = "secrets"
effect = "deny"
kind = ["read", "edit", "delete", "move"]
path = ["**/.env", "**/.env.*", "~/.ssh/**"]
reason = "secrets stay out of reach"

[[rule]]
id = "push"
effect = "ask"
command = ["git push*", "gh pr create*", "npm publish*"]

[[rule]]
id = "go-tools"
effect = "allow"
kind = "execute"
command = ["go test *", "go vet *", 're:^gofmt -l( \S+)*$']

[[rule]]
id = "edits"
effect = "allow"
kind = ["edit", "delete", "move"]
path = "**"                      # anywhere inside the workspace

[[rule]]
effect = "ask"                   # id: rule-5
kind = "read"
outside_workspace = true

[[rule]]
effect = "allow"
kind = "switch_mode"
mode = ["default", "acceptEdits"]
`

func TestDocExampleIsInSync(t *testing.T) {
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	// Compare the code lines of doc.go with the example's non-blank lines.
	var doc, example []string
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "//\t"); ok {
			doc = append(doc, rest)
		}
	}
	for _, l := range strings.Split(fullExample, "\n") {
		if l != "" {
			example = append(example, l)
		}
	}
	if !strings.Contains(strings.Join(doc, "\n"), strings.Join(example, "\n")) {
		t.Fatal("the policy file example in doc.go differs from fullExample")
	}
}

func TestLoadFullExample(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.toml")
	if err := os.WriteFile(path, []byte(fullExample), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ApproveReads || c.NonInteractive != NonInteractiveDeny || c.Remember != ScopeRun || c.DefaultMode != "plan" ||
		c.ModeAfterPlan != "acceptEdits" || c.NoFloor || !reflect.DeepEqual(c.ProtectedBranches, []string{"main", "master", "release/*"}) ||
		c.Path != path || len(c.Rules) != 6 {
		t.Fatalf("config %+v", c)
	}
	ids := []string{}
	for _, r := range c.Rules {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, ","); got != "secrets,push,go-tools,edits,rule-5,rule-6" {
		t.Fatalf("ids %s", got)
	}
	if r := c.Rules[0]; r.Effect != EffectDeny || r.Reason != "secrets stay out of reach" || len(r.Paths) != 3 || r.Source != path+":12" {
		t.Fatalf("rule 0: %+v", r)
	}
	if r := c.Rules[3]; !reflect.DeepEqual(r.Paths, []string{"**"}) || !reflect.DeepEqual(r.Kinds, []string{"edit", "delete", "move"}) {
		t.Fatalf("rule 3: %+v", r)
	}
	if r := c.Rules[4]; r.OutsideWorkspace == nil || !*r.OutsideWorkspace {
		t.Fatalf("rule 4: %+v", r)
	}

	ws, home := testWS(t)
	cfg, err := c.WithFlags(Flags{Approve: "ask", Deny: []string{"execute:go test ./secret/..."}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(cfg, Options{Workspace: ws, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	check(t, e, execReq("go test ./..."), want{"allow", "rule:go-tools"})
	check(t, e, execReq("gofmt -l a.go b.go"), want{"allow", "rule:go-tools"})
	check(t, e, execReq("go test ./secret/..."), want{"deny", "rule:flag-1"})
	check(t, e, execReq("git push"), want{"deny", "rule:push"})
	check(t, e, fileReq("edit", filepath.Join(ws, "cfg/.env.local")), want{"deny", "rule:secrets"})
	check(t, e, fileReq("read", filepath.Join(home, ".ssh/id_ed25519")), want{"deny", "rule:secrets"})
	check(t, e, fileReq("read", "/etc/hosts"), want{"deny", "rule:rule-5"})
	check(t, e, fileReq("edit", filepath.Join(ws, "main.go")), want{"allow", "rule:edits"})
	check(t, e, fileReq("read", filepath.Join(ws, "main.go")), want{"deny", driver.ByDefault}) // --approve ask
	check(t, e, fileReq("edit", path), want{"deny", "rule:floor-policy-files"})
	if e.DefaultMode() != "plan" || e.Mode() != Ask {
		t.Fatalf("default mode %q, mode %q", e.DefaultMode(), e.Mode())
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, file string
		line       int
		rule, msg  string
	}{
		{"toml syntax", "mode = \"ask\"\nfloor = tru\n", 2, "", ""},
		{"unknown top-level key", "mode = \"ask\"\n\nmod_after_plan = \"x\"\n", 3, "", `did you mean "mode_after_plan"`},
		{"bad mode", "mode = \"sometimes\"\n", 1, "", "unknown approval mode"},
		{"wrong type", "\nnon_interactive = 1\n", 2, "", "want a string, not an integer"},
		{"floor not a bool", "floor = \"no\"\n", 1, "", "true or false"},
		{"unknown floor rule", "floor_disable = [\"floor-rm\"]\n", 1, "", "no floor rule"},
		{"unknown rule key", "[[rule]]\neffect = \"deny\"\n\n[[rule]]\nid = \"x\"\neffect = \"allow\"\ncomand = \"ls\"\n", 7, `"x"`, `did you mean "command"`},
		{"bad kind", "[[rule]]\nid = \"k\"\neffect = \"deny\"\nkind = [\"read\", \"edti\"]\n", 4, `"k"`, `kind "edti" is not a tool kind`},
		{"bad regex", "[[rule]]\neffect = \"allow\"\n\ncommand = 're:^go (test'\n", 4, `"rule-1"`, "bad regular expression"},
		{"bad glob", "[[rule]]\neffect = \"deny\"\npath = \"src/[a\"\n", 3, `"rule-1"`, "bad glob"},
		{"path leaving the workspace", "[[rule]]\neffect = \"deny\"\npath = \"../x\"\n", 3, `"rule-1"`, "leaves the workspace"},
		{"missing effect", "[[rule]]\nid = \"e\"\nkind = \"read\"\n", 1, `"e"`, "no effect"},
		{"bad effect", "[[rule]]\neffect = \"maybe\"\n", 2, `"rule-1"`, "unknown effect"},
		{"duplicate id", "[[rule]]\nid = \"a\"\neffect = \"deny\"\n[[rule]]\nid = \"a\"\neffect = \"ask\"\n", 5, `"a"`, "line 1"},
		{"reserved id", "[[rule]]\nid = \"floor-x\"\neffect = \"deny\"\n", 2, `"floor-x"`, "reserved"},
		{"list element type", "[[rule]]\neffect = \"deny\"\ntool = [\"a\", 3]\n", 3, `"rule-1"`, "element 2 is an integer"},
		{"rule not a table array", "rule = \"x\"\n", 1, "", "array of tables"},
		{"outside_workspace type", "[[rule]]\neffect = \"deny\"\noutside_workspace = \"yes\"\n", 3, `"rule-1"`, "true or false"},
		{"version", "version = 2\n", 1, "", "version 1"},
		{"bad quota", "quota = \"retry\"\n", 1, "", "not park or wait"},
		{"bad quota_resumes", "\nquota_resumes = 0\n", 2, "", "from 1 to 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.toml", []byte(tt.file))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want a *ConfigError", err, err)
			}
			if ce.Line != tt.line || ce.Rule != tt.rule || !strings.Contains(ce.Msg, tt.msg) {
				t.Fatalf("got line %d rule %s msg %q; want line %d rule %s msg ~%q", ce.Line, ce.Rule, ce.Msg, tt.line, tt.rule, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "p.toml:") {
				t.Fatalf("error %q does not name the file and line", err)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestParseRuleFlag(t *testing.T) {
	yes := func(r Rule) Rule { return r }
	tests := []struct {
		in      string
		want    Rule
		wantErr string
	}{
		{"execute:go test *", yes(Rule{Kinds: []string{"execute"}, Commands: []string{"go test *"}}), ""},
		{"execute:re:^git (status|log)$", yes(Rule{Kinds: []string{"execute"}, Commands: []string{"re:^git (status|log)$"}}), ""},
		{"execute:git push origin HEAD:main", yes(Rule{Kinds: []string{"execute"}, Commands: []string{"git push origin HEAD:main"}}), ""},
		{"edit:**/.env", yes(Rule{Kinds: []string{"edit"}, Paths: []string{"**/.env"}}), ""},
		{"edit,delete,move:secrets/**", yes(Rule{Kinds: []string{"edit", "delete", "move"}, Paths: []string{"secrets/**"}}), ""},
		{"fetch:https://*.github.com/*", yes(Rule{Kinds: []string{"fetch"}, URLs: []string{"https://*.github.com/*"}}), ""},
		{"switch_mode:bypass*", yes(Rule{Kinds: []string{"switch_mode"}, Modes: []string{"bypass*"}}), ""},
		{"other:mcp__*", yes(Rule{Kinds: []string{"other"}, Tools: []string{"mcp__*"}}), ""},
		{"fetch", yes(Rule{Kinds: []string{"fetch"}}), ""},
		{"read,search", yes(Rule{Kinds: []string{"read", "search"}}), ""},
		{"tool=Bash", yes(Rule{Tools: []string{"Bash"}}), ""},
		{"*", yes(Rule{}), ""},
		{"", Rule{}, "want KIND[:PATTERN]"},
		{"write:x", Rule{}, `unknown kind "write"`},
		{"**/.env", Rule{}, "unknown kind"},
		{"*:x", Rule{}, "needs a kind"},
		{"execute,edit:x", Rule{}, "different things"},
		{"execute:", Rule{}, "empty pattern"},
		{"tool=", Rule{}, "tool name"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			r, err := ParseRuleFlag(EffectDeny, tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ~%q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Effect, tt.want.Source = EffectDeny, r.Source
			if !reflect.DeepEqual(r, tt.want) {
				t.Fatalf("got %+v\nwant %+v", r, tt.want)
			}
			if !strings.HasPrefix(r.Source, "--deny ") {
				t.Fatalf("source %q", r.Source)
			}
		})
	}
	if _, err := ParseRuleFlag("maybe", "read"); err == nil {
		t.Error("bad effect accepted")
	}
	if _, err := (Config{}).WithFlags(Flags{Allow: []string{"nope"}}); err == nil {
		t.Error("WithFlags accepted a bad flag")
	}
	if _, err := (Config{}).WithFlags(Flags{Approve: "sometimes"}); err == nil {
		t.Error("WithFlags accepted a bad --approve")
	}
}

func TestParseQuota(t *testing.T) {
	c, err := Parse("p.toml", []byte("quota = \"wait\"\nquota_resumes = 5\n"))
	if err != nil || c.Quota != QuotaWait || c.QuotaResumes != 5 {
		t.Fatalf("Parse = %+v, %v", c, err)
	}
}
