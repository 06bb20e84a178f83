package main

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	pb "llmworker/interop/gen/llmworker/v1"
)

// approvalsChecker runs the caller-bound approval checks against a server with the demo tools
// and --auth-tokens: owner, other and approver are tokens of three labels, every tool in
// scope; only approver has "approves" globs (matching the batches' tools).
type approvalsChecker struct {
	client                 pb.ToolServiceClient
	owner, other, approver string
	resume                 *pb.ResumeBatchRequest // the batch another caller tried to resume
}

// runApprovals checks that a batch paused for approval belongs to the caller that sent it:
// another caller's ResumeBatch is refused (RESUME_FORBIDDEN) and consumes nothing, the owner
// resumes it afterwards with the same token, and an approver decides another caller's batch.
func runApprovals(target, owner, other, approver string) error {
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(withTimeout))
	if err != nil {
		return fmt.Errorf("approvals connect: %w", err)
	}
	defer conn.Close()
	a := &approvalsChecker{client: pb.NewToolServiceClient(conn), owner: owner, other: other, approver: approver}
	checks := []struct {
		name, ok string
		run      func() error
	}{
		{"other caller", "another caller cannot resume", a.otherCannotResume},
		{"owner", "the owner resumes after a refused attempt", a.ownerResumes},
		{"approver", "an approver decides another caller's batch", a.approverDecides},
	}
	for _, check := range checks {
		if err := check.run(); err != nil {
			return fmt.Errorf("approvals %s: %w", check.name, err)
		}
		fmt.Println("OK approvals", check.ok)
	}
	return nil
}

// pause stores key with the owner's token, then sends the owner's batch of an echo and a
// kv_delete of key: paused at the kv_delete. It returns the ResumeBatch approving it.
func (a *approvalsChecker) pause(key string) (*pb.ResumeBatchRequest, error) {
	input := fmt.Sprintf(`{"key":%q}`, key)
	set, err := a.client.CallTool(bearer(a.owner), call("", "kv_set", fmt.Sprintf(`{"key":%q,"value":"v"}`, key)))
	if err != nil || set.Output != "ok" {
		return nil, fmt.Errorf("kv_set %s: output %q err %v", key, set.GetOutput(), err)
	}
	reply, err := a.client.CallTools(bearer(a.owner), &pb.CallToolsRequest{Calls: []*pb.CallToolRequest{
		call("e", "echo", `{"text":"hi"}`),
		call("d", "kv_delete", input),
	}})
	if err != nil {
		return nil, fmt.Errorf("CallTools as the owner: %w", err)
	}
	paused := reply.GetPaused()
	if paused == nil || paused.ResumeToken == "" || paused.PausedCallId != "d" {
		return nil, fmt.Errorf("outcome %v, want paused at d with a resume token", reply)
	}
	return &pb.ResumeBatchRequest{ResumeToken: paused.ResumeToken, Decisions: []*pb.CallDecision{
		{CallId: "d", Decision: &pb.CallDecision_Approve{Approve: &pb.Approval{}}},
	}}, nil
}

// resumed verifies that resume, with token, completes the batch pause sent: e "hi", d "deleted".
func (a *approvalsChecker) resumed(token string, resume *pb.ResumeBatchRequest) error {
	reply, err := a.client.ResumeBatch(bearer(token), resume)
	if err != nil {
		return fmt.Errorf("ResumeBatch: %w", err)
	}
	results := reply.GetCompleted().GetResults()
	if ids := resultIDs(results); !slices.Equal(ids, []string{"e", "d"}) {
		return fmt.Errorf("outcome %v, want completed with results e, d", reply)
	}
	return errors.Join(resultOK(results[0], "hi"), resultOK(results[1], "deleted"))
}

// otherCannotResume: the owner pauses a batch; another caller's ResumeBatch is refused.
func (a *approvalsChecker) otherCannotResume() error {
	resume, err := a.pause("approvals-owned")
	if err != nil {
		return err
	}
	a.resume = resume
	_, err = a.client.ResumeBatch(bearer(a.other), resume)
	return rpcError(err, codes.PermissionDenied, "RESUME_FORBIDDEN")
}

// ownerResumes: the refused attempt consumed nothing, so the owner resumes with the same token.
func (a *approvalsChecker) ownerResumes() error {
	if a.resume == nil {
		return errors.New("no paused batch: the previous check failed")
	}
	return a.resumed(a.owner, a.resume)
}

// approverDecides: the owner pauses another batch; the approver resumes it.
func (a *approvalsChecker) approverDecides() error {
	resume, err := a.pause("approvals-approved")
	if err != nil {
		return err
	}
	return a.resumed(a.approver, resume)
}
