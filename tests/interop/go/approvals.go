package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
)

// approvalsChecker runs the caller-bound approval checks against a server with the demo tools
// and --auth-tokens: owner, other and approver are clients with the tokens of three labels,
// every tool in scope; only approver has "approves" globs (matching the batches' tools).
type approvalsChecker struct {
	owner, other, approver *llmworker.Client
	resumeToken            string // the batch another caller tried to resume
}

// runApprovals checks that a batch paused for approval belongs to the caller that sent it:
// another caller's ResumeBatch is refused (RESUME_FORBIDDEN) and consumes nothing, the owner
// resumes it afterwards with the same token, and an approver decides another caller's batch.
func runApprovals(target, owner, other, approver string) error {
	var clients []*llmworker.Client
	for _, token := range []string{owner, other, approver} {
		client, err := llmworker.Dial(target, llmworker.WithToken(token),
			llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
		if err != nil {
			return fmt.Errorf("approvals connect: %w", err)
		}
		defer client.Close()
		clients = append(clients, client)
	}
	a := &approvalsChecker{owner: clients[0], other: clients[1], approver: clients[2]}
	return runChecks("approvals", []check{
		{"other caller", "another caller cannot resume", a.otherCannotResume},
		{"owner", "the owner resumes after a refused attempt", a.ownerResumes},
		{"approver", "an approver decides another caller's batch", a.approverDecides},
	})
}

// pause stores key as the owner, then sends the owner's batch of an echo and a kv_delete of
// key: paused at the kv_delete. It returns the batch's resume token.
func (a *approvalsChecker) pause(key string) (string, error) {
	ctx := context.Background()
	set, err := a.owner.CallTool(ctx, "kv_set", map[string]string{"key": key, "value": "v"})
	if err != nil || set.Output != "ok" {
		return "", fmt.Errorf("kv_set %s: %v err %v", key, set, err)
	}
	outcome, err := a.owner.CallTools(ctx, []llmworker.Call{
		{ID: "e", Name: "echo", Input: map[string]string{"text": "hi"}},
		{ID: "d", Name: "kv_delete", Input: map[string]string{"key": key}},
	})
	if err != nil {
		return "", fmt.Errorf("CallTools as the owner: %w", err)
	}
	paused := outcome.Paused
	if paused == nil || paused.ResumeToken == "" || paused.PausedCallId != "d" {
		return "", fmt.Errorf("outcome %v, want paused at d with a resume token", outcome)
	}
	return paused.ResumeToken, nil
}

// resumed verifies that client, approving d, completes the batch pause sent: e "hi", d "deleted".
func resumed(client *llmworker.Client, resumeToken string) error {
	outcome, err := client.Resume(context.Background(), resumeToken, llmworker.Approve("d"))
	if err != nil {
		return fmt.Errorf("ResumeBatch: %w", err)
	}
	if ids := resultIDs(outcome.Completed); !slices.Equal(ids, []string{"e", "d"}) {
		return fmt.Errorf("outcome %v, want completed with results e, d", outcome)
	}
	return errors.Join(resultOK(outcome.Completed[0], "hi"), resultOK(outcome.Completed[1], "deleted"))
}

// otherCannotResume: the owner pauses a batch; another caller's ResumeBatch is refused.
func (a *approvalsChecker) otherCannotResume() error {
	token, err := a.pause("approvals-owned")
	if err != nil {
		return err
	}
	a.resumeToken = token
	_, err = a.other.Resume(context.Background(), token, llmworker.Approve("d"))
	return rpcError(err, codes.PermissionDenied, "RESUME_FORBIDDEN")
}

// ownerResumes: the refused attempt consumed nothing, so the owner resumes with the same token.
func (a *approvalsChecker) ownerResumes() error {
	if a.resumeToken == "" {
		return errors.New("no paused batch: the previous check failed")
	}
	return resumed(a.owner, a.resumeToken)
}

// approverDecides: the owner pauses another batch; the approver resumes it.
func (a *approvalsChecker) approverDecides() error {
	token, err := a.pause("approvals-approved")
	if err != nil {
		return err
	}
	return resumed(a.approver, token)
}
