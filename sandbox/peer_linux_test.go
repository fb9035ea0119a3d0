package sandbox

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// The test binary as an agent holding a connection: it dials
// SANDBOX_TEST_PEER, leaves an orphan (reparented to its launcher), sends
// its pid and the orphan's, and holds the connection until the test closes
// it.
func init() {
	if p := os.Getenv("SANDBOX_TEST_UNIX_DIAL"); p != "" && !Launching() {
		// Connect, say so, and exit: the test then checks a gone peer.
		c, err := net.Dial("unix", p)
		if err != nil {
			os.Exit(3)
		}
		fmt.Fprintln(c, "hello")
		os.Exit(0)
	}
	addr := os.Getenv("SANDBOX_TEST_PEER")
	if addr == "" || Launching() {
		return
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	out, err := exec.Command("/bin/sh", "-c", "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(4)
	}
	fmt.Fprintf(c, "%d %s\n", os.Getpid(), strings.TrimSpace(string(out)))
	_, _ = bufio.NewReader(c).ReadString('\n') // until the test closes
	os.Exit(0)
}

// An agent below a launcher, an orphan it left, and the TCP connection it
// holds are all confined; this process, its own connection, and what
// cannot be read are told apart.
func TestConfined(t *testing.T) {
	launchers(t, testConfined)
}

func testConfined(t *testing.T, l launcher) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sb, err := New(Config{Mode: ModeAuto, Exe: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	l.apply(sb)
	defer sb.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_PEER="+ln.Addr().String())
	cmd.Stderr = os.Stderr
	p, err := sb.Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Started(cmd.Start()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Wait()
		p.Release()
	}()
	agentConn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer agentConn.Close() // first deferred to run: the agent exits
	line, err := bufio.NewReader(agentConn).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var agent, orphan int
	if _, err := fmt.Sscan(line, &agent, &orphan); err != nil {
		t.Fatalf("agent said %q: %v", line, err)
	}
	for what, pid := range map[string]int{"agent": agent, "orphan": orphan} {
		if in, why := Confined(pid); !in || why == "" {
			t.Errorf("the %s (pid %d) is not confined (%q)", what, pid, why)
		}
	}
	if in, why := ConfinedPeer(agentConn); !in || !strings.Contains(why, strconv.Itoa(agent)) {
		t.Errorf("the agent's connection: confined %v (%q)", in, why)
	}
	own, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	ownPeer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer ownPeer.Close()
	if in, why := ConfinedPeer(ownPeer); in {
		t.Errorf("this process's own connection is confined: %s", why)
	}
	for _, tc := range []struct {
		pid  int
		want bool
	}{{os.Getpid(), false}, {0, true}, {-1, true}, {1 << 30, true}} {
		if in, why := Confined(tc.pid); in != tc.want {
			t.Errorf("Confined(%d) = %v (%q), want %v", tc.pid, in, why, tc.want)
		}
	}
}

// A Unix socket's peer is this process: not confined. A peer that exited
// before the check cannot be proved outside: confined.
func TestConfinedPeerUnix(t *testing.T) {
	a, b := unixPair(t)
	defer a.Close()
	defer b.Close()
	if in, why := ConfinedPeer(a); in {
		t.Fatalf("confined: %s", why)
	}

	dir := t.TempDir()
	ln, err := net.Listen("unix", dir+"/s")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_UNIX_DIAL="+dir+"/s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if in, why := ConfinedPeer(c); !in {
		t.Fatalf("a peer that exited is not confined (%q)", why)
	}
}

func unixPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("unix", dir+"/s")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("unix", dir+"/s")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return b, a
}

func TestAgentCgroup(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"0::/\n", false},
		{"0::/user.slice/user-1000.slice/session-2.scope\n", false},
		{"0::/user.slice/tai-1234\n", true},
		{"0::/tai-1234/sub\n", true},
		{"0::/tai-\n0::/tai-x1\n", false},
		{"4:memory:/tai-1234\n0::/\n", false}, // v1 lines are not tai's
	} {
		if _, got := agentCgroup([]byte(tc.in)); got != tc.want {
			t.Errorf("agentCgroup(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseProcAddr(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the table is a little-endian host's")
	}
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"0100007F:1F90", "127.0.0.1:8080"},
		{"00000000000000000000000001000000:0050", "[::1]:80"},
		{"0000000000000000FFFF00000100007F:0016", "127.0.0.1:22"}, // v4-mapped
		{"nonsense", ""},
		{"0100007F:XYZ", ""},
	} {
		got, ok := parseProcAddr(tc.in)
		if tc.want == "" {
			if ok {
				t.Errorf("parseProcAddr(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if want := netip.MustParseAddrPort(tc.want); !ok || got != want {
			t.Errorf("parseProcAddr(%q) = %v %v, want %v", tc.in, got, ok, want)
		}
	}
}

// Under the scopes an agent can signal neither this process (tai) nor
// anything else outside its sandbox; its own children, yes.
func TestScopesRefuseSignalsOut(t *testing.T) {
	if ABI() < ScopesABI {
		t.Skip("no Landlock scopes in this kernel")
	}
	launchers(t, func(t *testing.T, l launcher) {
		w := newWorld(t, ModeOn, l)
		cmd, p, out := w.start(t, fmt.Sprintf(`kill -0 %d && echo tai-reached; sleep 1000 & kill $! && echo own-child-ok`, os.Getpid()))
		b, _ := readAll(out)
		_ = cmd.Wait()
		p.Release()
		if got := string(b); strings.Contains(got, "tai-reached") || !strings.Contains(got, "own-child-ok") {
			t.Fatalf("the agent said:\n%s", got)
		}
	})
}
