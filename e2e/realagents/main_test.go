// Package realagents drives real coding agents (qwen-code, gemini-cli,
// codex-acp, opencode, claude-agent-acp, Copilot CLI) through the real tai
// binary, each talking to tai's scripted model server instead of a model
// API: no network, no keys. The agents are installed, pinned, by
// scripts/install-agents.sh, whose output (exported) tells the suite where
// they are. Without it the suite skips, saying why, unless CI is set.
//
//	eval "$(scripts/install-agents.sh | sed 's/^/export /')"
//	go test ./e2e/realagents                  # -v shows each agent × scenario
//	go test ./e2e/realagents -run 'RealAgents/claude/'
//	go test ./e2e/realagents -update-wire     # recapture driver/acp/testdata/wire
//	go test ./e2e/realagents -run ParkAtLimit -update-quota   # recapture quota/testdata
package realagents

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tai-dev/tai/e2e/internal/build"
)

var (
	taiBin string
	// natsServer is the nats-server tai hub runs (go.mod's version).
	natsServer string
	// skipAll, when set, is why the whole suite skips (agents not installed
	// and CI unset).
	skipAll string
	// hasAudit: this tai has `tai run --audit`.
	hasAudit bool

	updateWire = flag.Bool("update-wire", false, "write the approve scenario's wire transcripts to driver/acp/testdata/wire")
	// updateQuota rewrites quota/testdata from the park tests' runs.
	updateQuota = flag.Bool("update-quota", false, "write each agent's limit transcript (TestRealAgentsParkAtLimit) to quota/testdata")
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("TAI_AGENTS_DIR") == "" {
		if os.Getenv("CI") != "" {
			fmt.Fprintln(os.Stderr, `realagents: TAI_AGENTS_DIR is not set but CI is: .ci/run must install the agents (eval "$(scripts/install-agents.sh | sed 's/^/export /')")`)
			os.Exit(1)
		}
		skipAll = `the real agents are not installed (TAI_AGENTS_DIR unset); run eval "$(scripts/install-agents.sh | sed 's/^/export /')" first`
		fmt.Fprintln(os.Stderr, "realagents: skipping:", skipAll)
		os.Exit(m.Run())
	}
	build.Main(m, "tai-realagents-bin-", func(_ string, bins []string) {
		taiBin, natsServer = bins[0], bins[1]
		help, err := exec.Command(taiBin, "run", "--help").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "tai run --help: %v\n%s", err, help)
			os.Exit(1)
		}
		hasAudit = strings.Contains(string(help), "--audit")
	}, build.Tai, build.NATSServer)
}

// need skips a test when the suite cannot run here.
func need(t *testing.T) {
	t.Helper()
	if skipAll != "" {
		t.Skip("skipping: " + skipAll)
	}
}
