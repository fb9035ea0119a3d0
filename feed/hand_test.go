package feed

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/tai-dev/tai/ask"
)

// POST /pause and /release reach OnHand with who asked, from outside a
// sandbox only: a sandboxed peer is refused (403) and the refusal heard;
// a run without OnHand answers 501; a channel nobody has is a 400.
func TestHand(t *testing.T) {
	for _, tc := range []struct {
		name     string
		action   HandAction
		via      string
		confined bool
		noHand   bool
		want     int
		wantVia  ask.Via
	}{
		{"pause from the terminal", HandPause, "terminal", false, false, http.StatusOK, ask.ViaTerminal},
		{"release from the page", HandRelease, "web", false, false, http.StatusOK, ask.ViaWeb},
		{"release without a channel", HandRelease, "", false, false, http.StatusOK, ask.ViaFeed},
		{"pause from a sandbox", HandPause, "terminal", true, false, http.StatusForbidden, ""},
		{"release from a sandbox", HandRelease, "web", true, false, http.StatusForbidden, ""},
		{"pause of a single run", HandPause, "terminal", false, true, http.StatusNotImplemented, ""},
		{"pause via an unknown channel", HandPause, "editor", false, false, http.StatusBadRequest, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(Options{Run: "fleet-hand", Dir: t.TempDir(), Confined: func(net.Conn) (bool, string) {
				return tc.confined, "pid 42 runs below tai's launcher"
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var mu sync.Mutex
			var hands []Hand
			var refusals []Refusal
			s.OnRefuse(func(r Refusal) { mu.Lock(); refusals = append(refusals, r); mu.Unlock() })
			if !tc.noHand {
				s.OnHand(func(h Hand) { mu.Lock(); hands = append(hands, h); mu.Unlock() })
			}
			c := Dial(s.Path())
			defer c.Close()
			err = c.Hand(context.Background(), tc.action, tc.via)
			var se *StatusError
			switch {
			case tc.want == http.StatusOK && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != http.StatusOK && (!errors.As(err, &se) || se.Code != tc.want):
				t.Fatalf("got %v, want %d", err, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.want == http.StatusOK {
				if len(hands) != 1 || hands[0].Action != tc.action || hands[0].Via != tc.wantVia {
					t.Fatalf("hands %+v, want one %s via %s", hands, tc.action, tc.wantVia)
				}
				return
			}
			if len(hands) != 0 {
				t.Fatalf("refused, yet heard: %+v", hands)
			}
			if tc.confined && (len(refusals) != 1 || refusals[0].Path != "/"+string(tc.action)) {
				t.Fatalf("refusals %+v", refusals)
			}
		})
	}
}
