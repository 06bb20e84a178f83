package llmworker

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// Call is one call of a batch: its id (unique in the batch), the tool, its input (marshalled
// to JSON unless it already is) and its metadata.
type Call struct {
	ID       string
	Name     string
	Input    any
	Metadata map[string]string
}

// Outcome is how a batch ended: Completed holds every result in call order, or Paused says
// why it waits (a tool that requires approval, a hook's pause) and how to go on.
type Outcome struct {
	Completed []*pb.CallResult
	Paused    *pb.PausedBatch
}

func outcomeOf(response *pb.CallToolsResponse) *Outcome {
	if paused := response.GetPaused(); paused != nil {
		return &Outcome{Paused: paused}
	}
	return &Outcome{Completed: response.GetCompleted().GetResults()}
}

// CallTools runs calls as one batch, through the server's hooks and approvals: a call of a
// tool that requires approval pauses the batch until Resume decides it.
func (c *Client) CallTools(ctx context.Context, calls []Call) (*Outcome, error) {
	batch := &pb.CallToolsRequest{}
	for _, call := range calls {
		message, err := request(call.Name, call.Input, []CallOption{WithCallID(call.ID), WithMetadata(call.Metadata)})
		if err != nil {
			return nil, err
		}
		batch.Calls = append(batch.Calls, message)
	}
	response, err := c.tools.CallTools(ctx, batch)
	if err != nil {
		return nil, FromError(err)
	}
	return outcomeOf(response), nil
}

// Decision decides one pending call of a paused batch: Approve, Deny or ApproveWithInput.
type Decision = *pb.CallDecision

// Approve lets the call run as it is.
func Approve(callID string) Decision {
	return &pb.CallDecision{CallId: callID, Decision: &pb.CallDecision_Approve{Approve: &pb.Approval{}}}
}

// Deny refuses the call; reason reaches the model as the call's error.
func Deny(callID, reason string) Decision {
	return &pb.CallDecision{CallId: callID, Decision: &pb.CallDecision_Deny{Deny: &pb.Denial{Reason: reason}}}
}

// ApproveWithInput lets the call run with input (JSON) instead of the model's.
func ApproveWithInput(callID string, input json.RawMessage) Decision {
	return &pb.CallDecision{CallId: callID, Decision: &pb.CallDecision_ApproveWithInput{
		ApproveWithInput: &pb.EditedApproval{InputJson: string(input)}}}
}

// Resume goes on with a paused batch (its PausedBatch.ResumeToken) after decisions; a call
// awaiting approval and not decided pauses it again.
func (c *Client) Resume(ctx context.Context, resumeToken string, decisions ...Decision) (*Outcome, error) {
	response, err := c.tools.ResumeBatch(ctx, &pb.ResumeBatchRequest{ResumeToken: resumeToken, Decisions: decisions})
	if err != nil {
		return nil, FromError(err)
	}
	return outcomeOf(response), nil
}

// Decide goes on with a paused batch found by PausedBatches, by its id instead of its
// token: allowed to the caller that paused it and to approvers whose globs match.
func (c *Client) Decide(ctx context.Context, batchID string, decisions ...Decision) (*Outcome, error) {
	response, err := c.tools.ResumeBatch(ctx, &pb.ResumeBatchRequest{BatchId: batchID, Decisions: decisions})
	if err != nil {
		return nil, FromError(err)
	}
	return outcomeOf(response), nil
}

// PausedBatches yields the paused batches this client may decide, oldest first, fetching
// pageSize at a time (0: the server's default, 50).
func (c *Client) PausedBatches(ctx context.Context, pageSize int) iter.Seq2[*pb.PausedBatchSummary, error] {
	return func(yield func(*pb.PausedBatchSummary, error) bool) {
		request := &pb.ListPausedBatchesRequest{PageSize: int32(min(max(pageSize, 0), 1<<31-1))}
		for {
			response, err := c.tools.ListPausedBatches(ctx, request)
			if err != nil {
				yield(nil, FromError(err))
				return
			}
			for _, batch := range response.GetBatches() {
				if !yield(batch, nil) {
					return
				}
			}
			next := response.GetNextPageToken()
			if next == "" {
				return
			}
			if next == request.PageToken { // a server that would page forever
				yield(nil, fmt.Errorf("llmworker: ListPausedBatches gave the page token %q again; the listing stops", next))
				return
			}
			request.PageToken = next
		}
	}
}

// RunProviderToolCalls runs the tool calls of a model's output in a provider's format (the
// Anthropic message, an OpenAI choice…) as one batch, and gives the results as the message
// to send back in that format, or the pause.
func (c *Client) RunProviderToolCalls(ctx context.Context, format pb.DefinitionFormat, modelOutput json.RawMessage) (json.RawMessage, *pb.PausedBatch, error) {
	response, err := c.tools.RunProviderToolCalls(ctx, &pb.RunProviderToolCallsRequest{
		Format: format, ModelOutputJson: string(modelOutput)})
	if err != nil {
		return nil, nil, FromError(err)
	}
	if paused := response.GetPaused(); paused != nil {
		return nil, paused, nil
	}
	return json.RawMessage(response.GetResultsMessageJson()), nil, nil
}
