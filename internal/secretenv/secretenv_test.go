package secretenv

import (
	"slices"
	"testing"
)

func TestScrub(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env, want []string
		dropped   []string
	}{
		{"tai's own go", []string{"PATH=/bin", "TAI_NATS_TOKEN=t", "TAI_NATS_CREDS=/c", "TAI_NATS_SERVER=/s", "TAI_FEED_TOKEN=f", "TAI_HUB_X=h", "HOME=/h"},
			[]string{"PATH=/bin", "HOME=/h"}, []string{"TAI_NATS_TOKEN", "TAI_NATS_CREDS", "TAI_NATS_SERVER", "TAI_FEED_TOKEN", "TAI_HUB_X"}},
		// The agent's own secrets are its business; tai's test hooks and
		// settings an agent (tai itself) needs stay.
		{"the agent's stay", []string{"ANTHROPIC_API_KEY=k", "TAI_TEST_NO_LANDLOCK=1", "TAI_DEBUG=1", "XTAI_NATS_TOKEN=x", "TAI_NATS"},
			[]string{"ANTHROPIC_API_KEY=k", "TAI_TEST_NO_LANDLOCK=1", "TAI_DEBUG=1", "XTAI_NATS_TOKEN=x", "TAI_NATS"}, nil},
		{"empty", nil, []string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.env)
			if got := Scrub(in); !slices.Equal(got, tc.want) {
				t.Errorf("Scrub = %q, want %q", got, tc.want)
			}
			if !slices.Equal(in, tc.env) {
				t.Errorf("Scrub changed its input: %q", in)
			}
			if got := Dropped(tc.env); !slices.Equal(got, tc.dropped) {
				t.Errorf("Dropped = %q, want %q", got, tc.dropped)
			}
		})
	}
}
