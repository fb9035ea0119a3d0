package remote

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A worker that has reported holds the task's lease for the results
// consumer's ack wait: a coordinator that dies before taking the result
// is handed it again by then, so the next one must not offer the task
// meanwhile (it would refuse the finished attempt's result as stale and
// run the task again). No coordinator runs here: the test offers the task
// as one would and reads the result itself.
func TestReportedAttemptHoldsItsLease(t *testing.T) {
	h := startHub(t)
	repo, plan := dagRepo(t, 1)
	ctx := context.Background()
	b := openBus(t, h.url, "coordinator")
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, repo, "git", "branch", "tai-fleet/r", "main")
	const lease = 2 * time.Second
	tm := TaskMsg{Run: "r", Task: "t00", Plan: planJSON, PlanDir: plan.Dir, Prompt: "do t00", RepoURL: repo,
		Target: "tai-fleet/r", Base: sh(t, repo, "git", "rev-parse", "main"), Lease: lease}
	if _, err := b.PutLease(ctx, "r", "t00", Lease{State: LeaseOffered}, 0); err != nil {
		t.Fatal(err)
	}
	results, err := b.Results.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "test", FilterSubject: resultSubject("r"), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, taskSubject(AgentToken(plan.Tasks[0].AgentSpec), "r", "t00"), tm); err != nil {
		t.Fatal(err)
	}
	stop := startWorkers(t, h.url, 1, lease)
	defer stop()
	msg, err := results.Next(jetstream.FetchMaxWait(2 * time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	seen := time.Now()
	var r ResultMsg
	if err := json.Unmarshal(msg.Data(), &r); err != nil || r.Attempt != 1 || r.Lost || r.Outcome.Status != "done" {
		t.Fatalf("result %+v, %v", r, err)
	}
	l, _, err := b.GetLease(ctx, "r", "t00")
	if err != nil {
		t.Fatal(err)
	}
	if l.State != LeaseClaimed || l.Attempt != 1 || l.Deadline.Before(seen.Add(resultAckWait-lease)) {
		t.Fatalf("lease %s attempt %d until %s, %s after the result came; want claimed past the ack wait (%s)",
			l.State, l.Attempt, l.Deadline.Format(time.StampMilli), l.Deadline.Sub(seen), resultAckWait)
	}
}
