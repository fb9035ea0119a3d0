// Package remote runs a fleet across hosts on NATS JetStream (2.9 feature
// set): tasks go on a work-queue stream, one durable pull consumer per
// agent; a worker's claim is a lease in a key-value bucket (worker,
// attempt, deadline) taken and refreshed with compare-and-swap; results
// travel as git (pushed to refs/tai/RUN/TASK/ATTEMPT in the coordinator's
// repository) and as small messages on a results stream; the coordinator
// accepts only the attempt that holds the lease, since the server accepts
// an ack that arrives after redelivery (nats-server#4786).
//
// remote keeps only what NATS has: the bus, leases, heartbeats and the
// sweep, the worker, clone/fetch/push, and the hub with its coordinator
// loop. The coordinator is fleet's NATS executor (fleet.Executor and its
// hooks): fleet schedules, reserves budgets, records the state and events,
// and merges; the coordinator offers each task, fences its lease, and hands
// back the accepted attempt, whose commit fleet's merge queue integrates.
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tai-dev/tai/internal/lazyre"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tai-dev/tai/fleet"
)

// Names of the JetStream objects tai uses.
const (
	StreamTasks   = "TAI_TASKS"   // work queue: tai.task.<agent>.<run>.<task>
	StreamResults = "TAI_RESULTS" // tai.result.<run>
	StreamEvents  = "TAI_EVENTS"  // tai.event.<run>.<task>, replayable
	BucketLeases  = "tai_leases"  // <run>/<task> → Lease
	BucketRuns    = "tai_runs"    // <run> → RunRecord
	BucketState   = "tai_state"   // <run> → fleet.State, as its coordinator saves it
)

// DefaultLease is how long a claim lasts without a heartbeat; the task
// consumers' ack wait is the same.
const DefaultLease = 30 * time.Second

// MaxMessage is the largest message tai sends (the server's default cap).
const MaxMessage = 1 << 20

// LeaseState is where a task is in its life on the bus.
type LeaseState string

// resultAckWait is how long the coordinator's results consumer waits for
// an ack: a result delivered to a coordinator that died before taking it
// is delivered again, to the next one, that long after.
const resultAckWait = time.Minute

// Lease states.
const (
	LeaseOffered  LeaseState = "offered"  // on the queue, nobody has it
	LeaseClaimed  LeaseState = "claimed"  // a worker runs attempt Attempt until Deadline
	LeaseAccepted LeaseState = "accepted" // the coordinator took attempt Attempt's result
	LeaseMerged   LeaseState = "merged"   // in the target
	LeaseFinal    LeaseState = "final"    // accepted, not merged (failed, blocked, ...)
	// LeaseParked: the coordinator took attempt Attempt's parked result
	// (its account at a usage limit; Park names the session it resumes);
	// it offers the task again when the account is released.
	LeaseParked LeaseState = "parked"
)

// Lease is a task's record in the leases bucket.
type Lease struct {
	State    LeaseState       `json:"state"`
	Worker   string           `json:"worker,omitempty"`
	Attempt  int              `json:"attempt"`
	Deadline time.Time        `json:"deadline,omitzero"`
	Head     string           `json:"head,omitempty"` // the accepted commit, then the merged one
	Status   fleet.TaskStatus `json:"status,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	Usage    fleet.Usage      `json:"usage"`
	Message  string           `json:"message,omitempty"`
	// Base is the commit the attempt started from: Base..Head is its work.
	Base      string     `json:"base,omitempty"`
	Questions []fleet.QA `json:"questions,omitempty"`
	// Parking, on a claim (or an offer), is the coordinator's word that
	// the task's account parked: its worker stops the attempt at once
	// (the session kept, the work pushed) and reports it parked. Written
	// by compare-and-swap, as the claim is, and kept by the holder's beats.
	Parking string `json:"parking,omitempty"`
	// Park, on a parked lease, is where the attempt stopped.
	Park *fleet.OutcomePark `json:"park,omitempty"`
}

// RunRecord is what a coordinator needs to resume a run from JetStream.
type RunRecord struct {
	Run     string          `json:"run"`
	Plan    json.RawMessage `json:"plan"`
	PlanDir string          `json:"plan_dir"`
	Repo    string          `json:"repo"`     // the coordinator's repository (local path)
	RepoURL string          `json:"repo_url"` // where workers clone and push
	Base    string          `json:"base"`
	Target  string          `json:"target"`
	Lease   time.Duration   `json:"lease"`
	Created time.Time       `json:"created"`
	// Submitted: the run was handed to the hub's coordinator (tai hub
	// --coordinate), which adopts it, and again after a restart until it
	// has Finished.
	Submitted bool `json:"submitted,omitempty"`
	// Human: a human follows the submitted run at a terminal (tai fleet
	// run --submit, not --detach, on one): the hub's coordinator puts the
	// asks policy or the answerer leave to a human to them and to its live
	// feed. Without one, the plan's non-interactive rule holds and an
	// unanswered question ends its task blocked: nobody waits.
	Human    bool            `json:"human,omitempty"`
	Finished time.Time       `json:"finished,omitzero"`
	Status   fleet.RunStatus `json:"status,omitempty"` // once finished
	ExitCode int             `json:"exit_code,omitempty"`
}

// TaskMsg offers a task.
type TaskMsg struct {
	Run     string          `json:"run"`
	Task    string          `json:"task"`
	Plan    json.RawMessage `json:"plan"`
	PlanDir string          `json:"plan_dir"`
	Prompt  string          `json:"prompt"`
	RepoURL string          `json:"repo_url"`
	Target  string          `json:"target"`
	Base    string          `json:"base"` // the target's commit when offered
	Limits  fleet.Limits    `json:"limits"`
	Lease   time.Duration   `json:"lease"`
	// Interactive: the coordinator has a human for permission asks; a
	// worker sends them there (else policy's non-interactive rule holds).
	Interactive bool `json:"interactive,omitempty"`
	// Resume, on a task offered again after its account's park, is the
	// session the parked attempt left (its work is the attempt's pushed
	// ref, which this attempt starts from).
	Resume *Resume `json:"resume,omitempty"`
}

// Resume is a parked attempt a new one continues.
type Resume struct {
	Attempt   int    `json:"attempt"`
	Worker    string `json:"worker"`
	Session   string `json:"session,omitempty"`
	Resumable bool   `json:"resumable,omitempty"`
}

// ResultMsg reports an attempt's end. The work itself is the commit Head,
// pushed as Ref.
type ResultMsg struct {
	Run       string            `json:"run"`
	Task      string            `json:"task"`
	Attempt   int               `json:"attempt"`
	Worker    string            `json:"worker"`
	Outcome   fleet.TaskOutcome `json:"outcome"`
	Head      string            `json:"head,omitempty"`
	Base      string            `json:"base,omitempty"` // the target's commit it started from (Head's parent when it changed something)
	Ref       string            `json:"ref,omitempty"`
	AuditSeq  uint64            `json:"audit_seq,omitempty"`
	AuditHead string            `json:"audit_head,omitempty"` // the hash of the task's audit log on its worker
	Lost      bool              `json:"lost,omitempty"`       // the worker knows it lost the lease
}

// EventMsg is a worker's or the coordinator's event.
type EventMsg struct {
	Time    time.Time `json:"ts"`
	Run     string    `json:"run"`
	Task    string    `json:"task,omitempty"`
	Worker  string    `json:"worker,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Kind    string    `json:"event"` // a worker's own word, or a fleet.EventKind (the coordinator's)
	Detail  string    `json:"detail,omitempty"`
	// Frame is a task's session event (Kind "frame"): what a local fleet
	// writes to its frames, for tai fleet logs.
	Frame json.RawMessage `json:"frame,omitempty"`
}

// KindFrame is the event kind of a task's session frame.
const KindFrame = "frame"

var tokenRE = lazyre.New(`[^A-Za-z0-9_-]`)

// token makes a name a NATS subject token (run and task names may hold
// dots).
func token(s string) string {
	return tokenRE().ReplaceAllStringFunc(s, func(c string) string { return fmt.Sprintf("%%%02X", c[0]) })
}

// AgentToken is the subject token of a task's agent: its name (also for
// a named agent with its own agent_cmd), or "custom" for an unnamed
// agent_cmd. A worker runs the tasks of the agents it lists.
func AgentToken(a fleet.AgentSpec) string {
	switch {
	case a.Agent != "":
		return token(a.Agent)
	case a.AgentCmd != "":
		return "custom"
	}
	return "builtin"
}

func taskSubject(agent, run, task string) string {
	return "tai.task." + agent + "." + token(run) + "." + token(task)
}
func resultSubject(run string) string { return "tai.result." + token(run) }
func eventSubject(run, task string) string {
	return "tai.event." + token(run) + "." + token(cmpOr(task, "_"))
}

// EventFilter is the subject of a run's events.
func EventFilter(run string) string { return "tai.event." + token(run) + ".>" }

func leaseKey(run, task string) string { return run + "/" + task }

func consumerName(agent string) string { return "tasks-" + strings.ReplaceAll(agent, "%", "_") }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Bus is tai's view of a JetStream server.
type Bus struct {
	NC      *nats.Conn
	JS      jetstream.JetStream
	Tasks   jetstream.Stream
	Results jetstream.Stream
	Events  jetstream.Stream
	Leases  jetstream.KeyValue
	Runs    jetstream.KeyValue
	Asks    jetstream.KeyValue
	Human   jetstream.KeyValue
	State   jetstream.KeyValue
}

// Open makes (or finds) tai's streams and buckets on the server nc talks
// to. Only 2.9 features are used.
func Open(ctx context.Context, nc *nats.Conn) (*Bus, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("remote: jetstream: %w", err)
	}
	b := &Bus{NC: nc, JS: js}
	streams := []struct {
		dst *jetstream.Stream
		cfg jetstream.StreamConfig
	}{
		{&b.Tasks, jetstream.StreamConfig{Name: StreamTasks, Subjects: []string{"tai.task.>"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute}},
		{&b.Results, jetstream.StreamConfig{Name: StreamResults, Subjects: []string{"tai.result.>"}, Storage: jetstream.FileStorage, MaxAge: 30 * 24 * time.Hour}},
		{&b.Events, jetstream.StreamConfig{Name: StreamEvents, Subjects: []string{"tai.event.>"}, Storage: jetstream.FileStorage, MaxAge: 30 * 24 * time.Hour}},
	}
	for _, s := range streams {
		st, err := js.Stream(ctx, s.cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			st, err = js.CreateStream(ctx, s.cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("remote: stream %s: %w", s.cfg.Name, err)
		}
		*s.dst = st
	}
	for _, k := range []struct {
		dst *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&b.Leases, jetstream.KeyValueConfig{Bucket: BucketLeases, History: 5, Storage: jetstream.FileStorage}},
		{&b.Runs, jetstream.KeyValueConfig{Bucket: BucketRuns, History: 1, Storage: jetstream.FileStorage}},
		{&b.Asks, jetstream.KeyValueConfig{Bucket: BucketAsks, History: 1, Storage: jetstream.FileStorage}},
		{&b.Human, jetstream.KeyValueConfig{Bucket: BucketHuman, History: 1, Storage: jetstream.FileStorage}},
		{&b.State, jetstream.KeyValueConfig{Bucket: BucketState, History: 1, Storage: jetstream.FileStorage}},
	} {
		kv, err := js.KeyValue(ctx, k.cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			kv, err = js.CreateKeyValue(ctx, k.cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("remote: bucket %s: %w", k.cfg.Bucket, err)
		}
		*k.dst = kv
	}
	return b, nil
}

// TaskConsumer finds (or makes) the durable consumer of agent's tasks.
// Its ack wait is the lease: a task a worker stops heartbeating is
// redelivered once its lease is over.
func (b *Bus) TaskConsumer(ctx context.Context, agent string, lease time.Duration) (jetstream.Consumer, error) {
	name := consumerName(agent)
	c, err := b.Tasks.Consumer(ctx, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		c, err = b.Tasks.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, FilterSubject: "tai.task." + agent + ".>",
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: lease, MaxDeliver: -1, MaxAckPending: -1})
		if errors.Is(err, jetstream.ErrConsumerExists) {
			c, err = b.Tasks.Consumer(ctx, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("remote: consumer %s: %w", name, err)
	}
	return c, nil
}

// SetLease makes agent's task consumer's ack wait the run's lease (the
// coordinator's word wins over a worker's default).
func (b *Bus) SetLease(ctx context.Context, agent string, lease time.Duration) error {
	name := consumerName(agent)
	_, err := b.Tasks.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, FilterSubject: "tai.task." + agent + ".>",
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: lease, MaxDeliver: -1, MaxAckPending: -1})
	if err != nil {
		return fmt.Errorf("remote: consumer %s: %w", name, err)
	}
	return nil
}

// GetLease reads a task's lease and its revision.
func (b *Bus) GetLease(ctx context.Context, run, task string) (Lease, uint64, error) {
	e, err := b.Leases.Get(ctx, leaseKey(run, task))
	if err != nil {
		return Lease{}, 0, err
	}
	var l Lease
	if err := json.Unmarshal(e.Value(), &l); err != nil {
		return Lease{}, 0, fmt.Errorf("remote: lease %s/%s: %w", run, task, err)
	}
	return l, e.Revision(), nil
}

// PutLease writes a lease if its revision is still rev (0: if it does not
// exist yet). It fails with jetstream.ErrKeyExists or a wrong-sequence
// API error when someone else wrote it first.
func (b *Bus) PutLease(ctx context.Context, run, task string, l Lease, rev uint64) (uint64, error) {
	data, err := json.Marshal(l)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		return b.Leases.Create(ctx, leaseKey(run, task), data)
	}
	return b.Leases.Update(ctx, leaseKey(run, task), data, rev)
}

// Publish sends a JSON message on a stream subject, refusing one over the
// message cap.
func (b *Bus) Publish(ctx context.Context, subj string, v any, opts ...jetstream.PublishOpt) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	limit := int(b.NC.MaxPayload())
	if limit <= 0 || limit > MaxMessage {
		limit = MaxMessage
	}
	if len(data) > limit {
		return fmt.Errorf("remote: a %d-byte message on %s is over the %d-byte cap", len(data), subj, limit)
	}
	if _, err := b.JS.Publish(ctx, subj, data, opts...); err != nil {
		return fmt.Errorf("remote: publish %s: %w", subj, err)
	}
	return nil
}

// Event publishes an event. Best effort, and without waiting for the
// server's ack (events are a record, not control; an agent's stream of
// frames must not wait on the network).
func (b *Bus) Event(_ context.Context, ev EventMsg) {
	data, err := json.Marshal(ev)
	if err != nil || len(data) > MaxMessage {
		return
	}
	_ = b.NC.Publish(eventSubject(ev.Run, ev.Task), data)
}

// Connect dials a NATS URL with a creds file or a token (read from a file
// or the environment by the caller; never from the command line).
func Connect(url, creds, token, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1)}
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(url, opts...)
	if errors.Is(err, nats.ErrAuthorization) {
		return nil, fmt.Errorf("remote: connecting to %s: %w: the hub needs its token; on its host tai reads it from %s, "+
			"on another host copy that file and pass --nats-token-file FILE", url, err, HubTokenFile())
	}
	if err != nil {
		return nil, fmt.Errorf("remote: connecting to %s: %w", url, err)
	}
	return nc, nil
}
