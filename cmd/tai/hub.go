package main

import (
	"github.com/spf13/cobra"

	"github.com/tai-dev/tai/app"
)

func addNATSFlags(c *cobra.Command, n *app.NATSFlags, usage string) {
	fl := c.Flags()
	fl.StringVar(&n.URL, "nats", "", usage)
	fl.StringVar(&n.Creds, "nats-creds", "", "NATS credentials file (or TAI_NATS_CREDS)")
	fl.StringVar(&n.TokenFile, "nats-token-file", "", "a file holding the NATS token (or TAI_NATS_TOKEN)")
}

func newHub(std app.IO, g *globals) *cobra.Command {
	var f app.HubFlags
	c := &cobra.Command{
		Use:   "hub [flags]",
		Short: "Run an embedded NATS server with JetStream for fleets across hosts",
		Long: "Run an embedded NATS server with JetStream that tai workers and fleet runs (--nats URL) share.\n" +
			"Its URL is the first line on stdout. Restarted on the same --store it keeps every task, lease and result.\n" +
			"With --coordinate it also schedules, answers for and merges the runs submitted to it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Verbose = g.verbose
			return code(app.Hub(cmd.Context(), f, std))
		},
	}
	c.Flags().StringVar(&f.Listen, "listen", "127.0.0.1:4222", "address to listen on (port 0: a free one)")
	c.Flags().StringVar(&f.Store, "store", "", "JetStream store directory (default: the state directory's hub/)")
	c.Flags().StringVar(&f.TokenFile, "token-file", "", "clients must present the token in this file (or TAI_NATS_TOKEN)")
	c.Flags().BoolVar(&f.Coordinate, "coordinate", false, "also coordinate the runs submitted to the hub (tai fleet run --nats URL --submit), resuming unfinished ones on restart")
	addNATSFlags(c, &f.NATS, "with --coordinate: coordinate on this NATS server instead of embedding one")
	return c
}

func newWorker(std app.IO, g *globals) *cobra.Command {
	var f app.WorkerFlags
	c := &cobra.Command{
		Use:   "worker --nats URL [flags]",
		Short: "Run fleet tasks offered over NATS, each in a worktree of a clone kept per repository",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Verbose = g.verbose
			return code(app.Worker(cmd.Context(), f, std))
		},
	}
	addNATSFlags(c, &f.NATS, "the NATS server with JetStream (nats://host:4222) to take tasks from")
	c.Flags().StringVar(&f.Name, "name", "", "the worker's name, unique among workers (default HOST-PID)")
	c.Flags().IntVar(&f.Slots, "slots", 1, "tasks at once")
	c.Flags().StringSliceVar(&f.Agents, "agents", []string{"builtin"}, "agents this worker runs (installed here)")
	c.Flags().StringVar(&f.Dir, "dir", "", "clones, worktrees and audit logs (default: the state directory's worker/NAME)")
	c.Flags().StringVar(&f.Sandbox, "sandbox", "auto", "confine each task's agent with Landlock: auto (where the kernel has it) | on (fail without it) | off")
	c.Flags().DurationVar(&f.Lease, "lease", 0, "ack wait of a task consumer this worker creates (default 30s; a run's coordinator sets its own)")
	return c
}
