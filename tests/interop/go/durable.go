package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// durableDenial is the reason the batch decided by its id is denied with; its result's
// output gives it.
const durableDenial = "not by id"

// durableMaxPages bounds the paging of ListPausedBatches, so a next_page_token that never
// empties fails the check instead of looping forever.
const durableMaxPages = 10000

// durableChecker runs the checks of paused batches in a store two servers share: a and b
// are the ToolServices of the two processes, both with the demo tools and the same --state.
type durableChecker struct {
	a, b   *llmworker.Client
	key    string          // unique to this run: Go and Node runs may share the servers
	paused *pb.PausedBatch // the batch A paused, once paused
}

// runDurable checks that a batch paused on one server process is listed, resumed and decided
// by its id on another sharing its --state, and that its resume token is single use across
// both.
func runDurable(targetA, targetB string) error {
	a, err := llmworker.Dial(targetA, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("durable connect A: %w", err)
	}
	defer a.Close()
	b, err := llmworker.Dial(targetB, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("durable connect B: %w", err)
	}
	defer b.Close()
	d := &durableChecker{a: a, b: b, key: fmt.Sprintf("durable-go-%d", time.Now().UnixNano())}
	return runChecks("durable", []check{
		{"pause", "paused on A", d.pausedOnA},
		{"list", "listed on B", d.listedOnB},
		{"resume", "resumed on B", d.resumedOnB},
		{"second resume", "second resume refused", d.secondResumeRefused},
		{"batch id", "decided by batch id", d.decidedByBatchID},
	})
}

// deleteInput is kv_delete's input for key.
func deleteInput(key string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))
}

// pauseDelete sends A a batch of one kv_delete of key (which requires approval): paused at
// it, with a batch id, a resume token and an expiry, the call pending with its input.
func (d *durableChecker) pauseDelete(key string) (*pb.PausedBatch, error) {
	reply, err := d.a.CallTools(context.Background(), []llmworker.Call{{ID: "d", Name: "kv_delete", Input: deleteInput(key)}})
	if err != nil {
		return nil, fmt.Errorf("CallTools on A: %w", err)
	}
	paused := reply.Paused
	if paused == nil || paused.ResumeToken == "" || paused.BatchId == "" || paused.PausedCallId != "d" {
		return nil, fmt.Errorf("outcome %v, want paused at d with a resume token and a batch id", reply)
	}
	if paused.ExpireTime == nil {
		return nil, fmt.Errorf("paused batch %s without an expire_time", paused.BatchId)
	}
	if err := pendingDelete(paused.PendingCalls, key); err != nil {
		return nil, fmt.Errorf("paused batch %s: %w", paused.BatchId, err)
	}
	return paused, nil
}

// pendingDelete verifies that pending is the kv_delete of key only, awaiting approval.
func pendingDelete(pending []*pb.PendingCall, key string) error {
	want := &pb.PendingCall{CallId: "d", Name: "kv_delete", InputJson: string(deleteInput(key)), AwaitingApproval: true}
	if len(pending) != 1 || !proto.Equal(pending[0], want) {
		return fmt.Errorf("pending calls %v, want only %v", pending, want)
	}
	return nil
}

// listAll pages through client's ListPausedBatches one batch a page until next_page_token is
// empty (the raw stub, so each page is checked): every batch listed, each once. The SDK's
// PausedBatches, paging the same way, must give the same batches.
func listAll(client *llmworker.Client) ([]*pb.PausedBatchSummary, error) {
	var batches []*pb.PausedBatchSummary
	seen := map[string]bool{}
	token := ""
	for range durableMaxPages {
		page, err := client.Service().ListPausedBatches(context.Background(),
			&pb.ListPausedBatchesRequest{PageSize: 1, PageToken: token})
		if err != nil {
			return nil, fmt.Errorf("ListPausedBatches (page_token %q): %w", token, err)
		}
		if len(page.Batches) > 1 {
			return nil, fmt.Errorf("ListPausedBatches with page_size 1: %d batches", len(page.Batches))
		}
		for _, batch := range page.Batches {
			if seen[batch.BatchId] {
				return nil, fmt.Errorf("ListPausedBatches: batch %s on two pages", batch.BatchId)
			}
			seen[batch.BatchId] = true
			batches = append(batches, batch)
		}
		if page.NextPageToken == "" {
			var paged []string
			for batch, err := range client.PausedBatches(context.Background(), 1) {
				if err != nil {
					return nil, fmt.Errorf("the SDK's PausedBatches: %w", err)
				}
				paged = append(paged, batch.BatchId)
			}
			if listed := listedIDs(batches); !slices.Equal(paged, listed) {
				return nil, fmt.Errorf("the SDK's PausedBatches gave %v, the pages %v", paged, listed)
			}
			return batches, nil
		}
		token = page.NextPageToken
	}
	return nil, fmt.Errorf("ListPausedBatches: a next_page_token after %d pages", durableMaxPages)
}

// listedIDs lists the batch ids of batches.
func listedIDs(batches []*pb.PausedBatchSummary) []string {
	ids := make([]string, 0, len(batches))
	for _, batch := range batches {
		ids = append(ids, batch.BatchId)
	}
	return ids
}

// pausedOnA: A pauses a batch of one kv_delete.
func (d *durableChecker) pausedOnA() error {
	paused, err := d.pauseDelete(d.key)
	if err != nil {
		return err
	}
	d.paused = paused
	return nil
}

// listedOnB: B lists the batch A paused, with its pending kv_delete, its reason, no caller
// (no --auth-tokens) and the expiry A gave, after its creation.
func (d *durableChecker) listedOnB() error {
	if d.paused == nil {
		return fmt.Errorf("no paused batch: the previous check failed")
	}
	batches, err := listAll(d.b)
	if err != nil {
		return err
	}
	index := slices.IndexFunc(batches, func(b *pb.PausedBatchSummary) bool { return b.BatchId == d.paused.BatchId })
	if index < 0 {
		return fmt.Errorf("batch %s not among the %d listed: %v", d.paused.BatchId, len(batches), listedIDs(batches))
	}
	listed := batches[index]
	if err := pendingDelete(listed.PendingCalls, d.key); err != nil {
		return fmt.Errorf("listed batch %s: %w", listed.BatchId, err)
	}
	if listed.Reason != d.paused.Reason || listed.Caller != "" {
		return fmt.Errorf("listed batch %s: reason %q caller %q, want reason %q (as paused) and no caller",
			listed.BatchId, listed.Reason, listed.Caller, d.paused.Reason)
	}
	if listed.CreateTime == nil || listed.ExpireTime == nil {
		return fmt.Errorf("listed batch %s: create_time %v expire_time %v, want both", listed.BatchId,
			listed.CreateTime, listed.ExpireTime)
	}
	created, expires := listed.CreateTime.AsTime(), listed.ExpireTime.AsTime()
	if created.After(expires) {
		return fmt.Errorf("listed batch %s: create_time %v after expire_time %v", listed.BatchId, created, expires)
	}
	if paused := d.paused.ExpireTime.AsTime(); !expires.Equal(paused) {
		return fmt.Errorf("listed batch %s: expire_time %v, the paused batch's %v", listed.BatchId, expires, paused)
	}
	return nil
}

// resumedOnB: B takes A's resume token, approving the kv_delete, and runs it on its own
// store (the demo key-value store is per process): B stores the key first, so "deleted".
func (d *durableChecker) resumedOnB() error {
	if d.paused == nil {
		return fmt.Errorf("no paused batch: the previous check failed")
	}
	set, err := d.b.CallTool(context.Background(), "kv_set", map[string]string{"key": d.key, "value": "v"})
	if err != nil || set.Output != "ok" {
		return fmt.Errorf("kv_set %s on B: %v err %v", d.key, set, err)
	}
	reply, err := d.b.Resume(context.Background(), d.paused.ResumeToken, llmworker.Approve("d"))
	if err != nil {
		return fmt.Errorf("ResumeBatch on B: %w", err)
	}
	results := reply.Completed
	if ids := resultIDs(results); !slices.Equal(ids, []string{"d"}) {
		return fmt.Errorf("outcome %v, want completed with result d", reply)
	}
	return resultOK(results[0], "deleted")
}

// secondResumeRefused: the token B used is used up on A too.
func (d *durableChecker) secondResumeRefused() error {
	if d.paused == nil {
		return fmt.Errorf("no paused batch: the previous check failed")
	}
	_, err := d.a.Resume(context.Background(), d.paused.ResumeToken, llmworker.Approve("d"))
	if err := rpcError(err, codes.NotFound, "RESUME_TOKEN_UNKNOWN"); err != nil {
		return fmt.Errorf("ResumeBatch on A with the used token: %w", err)
	}
	return nil
}

// decidedByBatchID: A pauses another batch; B denies its kv_delete by the batch's id, not
// its token. Then neither server lists it, nor the batch resumed before.
func (d *durableChecker) decidedByBatchID() error {
	key := d.key + "-denied"
	paused, err := d.pauseDelete(key)
	if err != nil {
		return err
	}
	reply, err := d.b.Decide(context.Background(), paused.BatchId, llmworker.Deny("d", durableDenial))
	if err != nil {
		return fmt.Errorf("ResumeBatch on B by batch id %s: %w", paused.BatchId, err)
	}
	results := reply.Completed
	if ids := resultIDs(results); !slices.Equal(ids, []string{"d"}) {
		return fmt.Errorf("outcome %v, want completed with result d", reply)
	}
	if err := resultError(results[0], codes.PermissionDenied, "CALL_DENIED"); err != nil {
		return err
	}
	if !strings.Contains(results[0].Output, durableDenial) {
		return fmt.Errorf("result d: output %q does not give the denial reason %q", results[0].Output, durableDenial)
	}
	decided := []string{d.paused.GetBatchId(), paused.BatchId}
	for _, server := range []struct {
		name   string
		client *llmworker.Client
	}{{"B", d.b}, {"A", d.a}} {
		batches, err := listAll(server.client)
		if err != nil {
			return fmt.Errorf("on %s: %w", server.name, err)
		}
		for _, id := range listedIDs(batches) {
			if slices.Contains(decided, id) {
				return fmt.Errorf("%s still lists the decided batch %s", server.name, id)
			}
		}
	}
	return nil
}
