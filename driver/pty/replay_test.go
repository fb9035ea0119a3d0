package pty

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tai-dev/tai/driver/pty/profile"
	"github.com/tai-dev/tai/driver/pty/term"
)

// replayed is the settle analysis of one recorded turn, all on the
// recording's own clock (no real time passes).
type replayed struct {
	lastOut      time.Duration // the agent's last output of the turn
	profileIdle  time.Duration // when profile+settler declared the turn over (-1: never)
	quietIdle    time.Duration // when a plain 2 s quiescence rule would (-1: never)
	falseProfile int           // idle verdicts after the turn was taken and before lastOut
	falseQuiet   int           // quiescence idles before lastOut
}

// replay feeds a recording to the emulator and evaluates the screen the
// way the session does: a frame after output pauses (16 ms, capped at
// 48 ms of continuous output). The turn starts at the "submit" marker; it
// is taken once working or waiting is seen; the profile's idle after that
// ends it. The same run measures agentapi's rule (2 s without output).
func replay(t testing.TB, p *profile.Profile, chunks []Chunk) replayed {
	t.Helper()
	const frame, maxFrame, quiet = 16 * time.Millisecond, 48 * time.Millisecond, 2 * time.Second
	scr := term.NewScreen(term.DefaultCols, term.DefaultRows, nil)
	set := settler{quiet: p.QuietWindow()}
	for i, c := range chunks {
		if c.Kind == "m" && (string(c.Data) == "end" || string(c.Data) == "turn-end") {
			chunks = chunks[:i] // the app's exit is not part of the turn
			break
		}
	}
	var submit time.Duration = -1
	r := replayed{profileIdle: -1, quietIdle: -1}
	var outs []time.Duration
	for _, c := range chunks {
		if c.Kind == "m" && string(c.Data) == "submit" {
			submit = c.At
		}
		if c.Kind == "o" && submit >= 0 {
			outs = append(outs, c.At)
		}
	}
	if submit < 0 || len(outs) == 0 {
		t.Fatal("recording has no submit marker or no output after it")
	}
	// Ground truth: the transcript the turn ends with. The reply is complete
	// once the body first reaches it ("done"); an idle verdict
	// while the body still differs from it ended the turn too early (a
	// false idle). Trailing redraws that repaint the same text (qwen
	// repaints the whole screen ~50 ms after its idle frame) are not
	// progress of the turn.
	final := term.NewScreen(term.DefaultCols, term.DefaultRows, nil)
	for _, c := range chunks {
		if c.Kind == "o" {
			_, _ = final.Write(c.Data)
		}
	}
	finalBody := strings.Join(p.Body(final.Snapshot().Lines), "\n")
	probe := term.NewScreen(term.DefaultCols, term.DefaultRows, nil)
	done, busyEnd := time.Duration(-1), time.Duration(-1)
	for _, c := range chunks {
		if c.Kind != "o" {
			continue
		}
		_, _ = probe.Write(c.Data)
		if c.At < submit {
			continue
		}
		if done < 0 && strings.Join(p.Body(probe.Snapshot().Lines), "\n") == finalBody {
			done = c.At
		}
		// The agent may keep its working indicator up a little after its
		// last text (opencode: ~140 ms): the turn is over when both are.
		if st := p.Parse(probe.Snapshot().Lines).State; st == profile.Working || st == profile.Waiting {
			busyEnd = -1
		} else if busyEnd < 0 {
			busyEnd = c.At
		}
	}
	r.lastOut = max(done, busyEnd)
	base := time.Unix(0, 0)
	taken := false
	var pendSince time.Duration = -1
	isFinal := func() bool { return strings.Join(p.Body(scr.Snapshot().Lines), "\n") == finalBody }
	evaluate := func(at time.Duration) {
		if at < submit {
			return
		}
		st := set.status(base.Add(at), p.Parse(scr.Snapshot().Lines))
		switch {
		case st == StatusWorking || st == StatusWaiting:
			taken = true
		case st == StatusIdle && taken:
			if !isFinal() {
				r.falseProfile++
			} else if r.profileIdle < 0 {
				r.profileIdle = at
			}
		}
	}
	for i, c := range chunks {
		if c.Kind != "o" {
			continue
		}
		_, _ = scr.Write(c.Data)
		set.output(base.Add(c.At))
		if pendSince < 0 {
			pendSince = c.At
		}
		next := time.Duration(1<<62 - 1)
		for _, d := range chunks[i+1:] {
			if d.Kind == "o" {
				next = d.At
				break
			}
		}
		// The frame timer fires if output pauses for a frame, or at the cap.
		at := min(c.At+frame, pendSince+maxFrame)
		if at <= next {
			evaluate(at)
			pendSince = -1
		}
		// agentapi's rule on the same stream.
		if c.At >= submit && next-c.At >= quiet {
			if !isFinal() {
				r.falseQuiet++
			} else if r.quietIdle < 0 {
				r.quietIdle = c.At + quiet
			}
		}
	}
	if r.profileIdle < 0 {
		// Past the last output only the quiescence fallback remains.
		evaluate(outs[len(outs)-1] + set.quiet)
	}
	return r
}

func recordings(t testing.TB) []string {
	recs, err := filepath.Glob("testdata/*/*/*.rec")
	if err != nil || len(recs) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	return recs
}

func load(t testing.TB, path string) (*profile.Profile, []Chunk) {
	t.Helper()
	agent := strings.Split(filepath.ToSlash(path), "/")[1]
	p, ok := profile.Builtin(agent)
	if !ok {
		t.Fatalf("no profile for %s", agent)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunks, err := ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	return p, chunks
}

// On every recorded real session the profile declares the turn over
// after the agent's last output (never before: no false idle), within a
// frame or two of it, and sooner than the 2 s quiescence rule.
func TestReplaySettle(t *testing.T) {
	for _, path := range recordings(t) {
		t.Run(path, func(t *testing.T) {
			p, chunks := load(t, path)
			r := replay(t, p, chunks)
			if r.falseProfile != 0 {
				t.Errorf("%d false idle verdicts before the last output", r.falseProfile)
			}
			if r.profileIdle < 0 {
				t.Fatalf("the profile never declared idle")
			}
			lat := r.profileIdle - r.lastOut
			if lat > 100*time.Millisecond {
				t.Errorf("settle latency %s, want a frame or two", lat)
			}
			t.Logf("settle latency: profile %s, 2 s quiescence %s; false idle: profile %d, quiescence %d",
				lat, r.quietIdle-r.lastOut, r.falseProfile, r.falseQuiet)
		})
	}
}

// BenchmarkSettleLatency reports, per recording, the time from the last
// output to the idle verdict on the recording's clock: profile vs the
// plain 2 s quiescence window, and the false idles of each.
func BenchmarkSettleLatency(b *testing.B) {
	for _, path := range recordings(b) {
		b.Run(filepath.Base(filepath.Dir(filepath.Dir(path)))+"/"+strings.TrimSuffix(filepath.Base(path), ".rec"), func(b *testing.B) {
			p, chunks := load(b, path)
			var r replayed
			for b.Loop() {
				r = replay(b, p, chunks)
			}
			b.ReportMetric(float64((r.profileIdle-r.lastOut).Microseconds())/1000, "profile-ms")
			b.ReportMetric(float64((r.quietIdle-r.lastOut).Microseconds())/1000, "quiet2s-ms")
			b.ReportMetric(float64(r.falseProfile), "false-idle")
			b.ReportMetric(float64(r.falseQuiet), "quiet-false-idle")
		})
	}
}

// BenchmarkEmulator is vt10x's throughput on recorded real TUI output.
func BenchmarkEmulator(b *testing.B) {
	for _, path := range recordings(b) {
		_, chunks := load(b, path)
		var n int64
		for _, c := range chunks {
			if c.Kind == "o" {
				n += int64(len(c.Data))
			}
		}
		b.Run(filepath.Base(filepath.Dir(filepath.Dir(path)))+"/"+strings.TrimSuffix(filepath.Base(path), ".rec"), func(b *testing.B) {
			b.SetBytes(n)
			for b.Loop() {
				scr := term.NewScreen(term.DefaultCols, term.DefaultRows, nil)
				for _, c := range chunks {
					if c.Kind == "o" {
						_, _ = scr.Write(c.Data)
					}
				}
			}
		})
	}
}
