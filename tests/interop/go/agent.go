package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// rpcTimeout is the deadline of every agent RPC.
const rpcTimeout = 20 * time.Second

// whoamiResult is the structured result of the demo tool whoami.
type whoamiResult struct {
	CallID      string            `json:"call_id"`
	Tool        string            `json:"tool"`
	Metadata    map[string]string `json:"metadata"`
	SecondsLeft *float64          `json:"seconds_left"`
}

// agent runs the agent-contract checks in order; resumeToken and decisions are what the
// pause check prepares for the resume and single-use checks.
type agent struct {
	client      *llmworker.Client
	resumeToken string
	decisions   []llmworker.Decision
}

func runAgent(target string) error {
	client, err := llmworker.Dial(target, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("agent connect: %w", err)
	}
	defer client.Close()
	a := &agent{client: client}
	return runChecks("agent", []check{
		{"listing", "listing: titles, annotations, output schemas, approval", a.listing},
		{"call id", "call id and metadata reach the tool", a.callIDAndMetadata},
		{"approval", "approval required for CallTool", a.approvalRequired},
		{"metadata", "bad metadata refused", a.badMetadata},
		{"batch", "batch completed", a.batchCompleted},
		{"pause", "batch paused for approval", a.batchPaused},
		{"resume", "batch resumed: approve, deny, edited input", a.batchResumed},
		{"token", "resume token single use", a.tokenSingleUse},
		{"duplicates", "duplicate call ids refused", a.duplicateCallIDs},
	})
}

// withTimeout gives each RPC its own rpcTimeout deadline.
func withTimeout(ctx context.Context, method string, request, reply any, conn *grpc.ClientConn,
	invoker grpc.UnaryInvoker, options ...grpc.CallOption) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	return invoker(ctx, method, request, reply, conn, options...)
}

// call is a batch's call without metadata; input is JSON.
func call(callID, name, input string) llmworker.Call {
	return llmworker.Call{ID: callID, Name: name, Input: json.RawMessage(input)}
}

// resultOK verifies a batch result that succeeded with output.
func resultOK(result *pb.CallResult, output string) error {
	if result.IsError || result.Skipped || result.Output != output {
		return fmt.Errorf("result %s: is_error=%v skipped=%v output %q, want %q",
			result.CallId, result.IsError, result.Skipped, result.Output, output)
	}
	return nil
}

// resultIDs lists the call ids of results.
func resultIDs(results []*pb.CallResult) []string {
	ids := make([]string, 0, len(results))
	for _, result := range results {
		ids = append(ids, result.CallId)
	}
	return ids
}

// hints renders annotations as "unset" or each hint as true, false or unset.
func hints(annotations *pb.ToolAnnotations) string {
	if annotations == nil {
		return "unset"
	}
	hint := func(value *bool) string {
		if value == nil {
			return "unset"
		}
		return strconv.FormatBool(*value)
	}
	return fmt.Sprintf("read_only=%s destructive=%s idempotent=%s open_world=%s",
		hint(annotations.ReadOnlyHint), hint(annotations.DestructiveHint),
		hint(annotations.IdempotentHint), hint(annotations.OpenWorldHint))
}

func (a *agent) listing() error {
	listed, err := a.client.ListDefinitions(context.Background())
	if err != nil {
		return err
	}
	definitions := map[string]*pb.ToolDefinition{}
	for _, definition := range listed.Tools {
		definitions[definition.Name] = definition
	}
	for _, want := range []struct {
		name, title, hints string
		approval           bool
	}{
		{"whoami", "Who am I", "read_only=true destructive=unset idempotent=true open_world=false", false},
		{"kv_delete", "Delete a key", "read_only=unset destructive=true idempotent=true open_world=unset", true},
		{"echo", "", "unset", false},
	} {
		definition, ok := definitions[want.name]
		if !ok {
			return fmt.Errorf("%s not listed", want.name)
		}
		if definition.Title != want.title || hints(definition.Annotations) != want.hints ||
			definition.RequiresApproval != want.approval {
			return fmt.Errorf("%s: title %q annotations %s requires_approval %v, want %q %s %v",
				want.name, definition.Title, hints(definition.Annotations), definition.RequiresApproval,
				want.title, want.hints, want.approval)
		}
	}
	if schema := definitions["echo"].OutputSchemaJson; schema != "" {
		return fmt.Errorf("echo: output_schema_json %q, want empty", schema)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	whoamiSchema := definitions["whoami"].OutputSchemaJson
	if err := json.Unmarshal([]byte(whoamiSchema), &schema); err != nil {
		return fmt.Errorf("whoami: output_schema_json %q: %w", whoamiSchema, err)
	}
	if schema.Type != "object" {
		return fmt.Errorf("whoami: output_schema_json %s: type %q, want object", whoamiSchema, schema.Type)
	}
	for _, property := range []string{"call_id", "tool", "metadata", "seconds_left"} {
		if _, ok := schema.Properties[property]; !ok {
			return fmt.Errorf("whoami: output_schema_json %s has no property %q", whoamiSchema, property)
		}
	}
	return nil
}

func (a *agent) callIDAndMetadata() error {
	metadata := map[string]string{"user": "ada", "tenant.id": "t-7"}
	reply, err := a.client.CallTool(context.Background(), "whoami", nil,
		llmworker.WithCallID("go-1"), llmworker.WithMetadata(metadata))
	if err != nil {
		return err
	}
	var got whoamiResult
	if err := json.Unmarshal(reply.Structured, &got); err != nil {
		return fmt.Errorf("structured_output_json %q: %w", reply.Structured, err)
	}
	// gRPC rounds the deadline it sends up a little: allow a second over rpcTimeout.
	if got.CallID != "go-1" || got.Tool != "whoami" || !maps.Equal(got.Metadata, metadata) ||
		got.SecondsLeft == nil || *got.SecondsLeft <= 0 || *got.SecondsLeft > rpcTimeout.Seconds()+1 {
		return fmt.Errorf("structured_output_json %s, want call_id go-1, tool whoami, metadata %v, 0 < seconds_left <= 21",
			reply.Structured, metadata)
	}
	return nil
}

func (a *agent) approvalRequired() error {
	_, err := a.client.CallTool(context.Background(), "kv_delete", map[string]string{"key": "x"})
	failed, err := failure(err, codes.FailedPrecondition, "APPROVAL_REQUIRED")
	if err != nil {
		return err
	}
	if message := failed.Message; !strings.Contains(message, "CallTools") {
		return fmt.Errorf("message %q does not mention CallTools", message)
	}
	return nil
}

func (a *agent) badMetadata() error {
	_, err := a.client.CallTool(context.Background(), "echo", map[string]string{"text": "hi"},
		llmworker.WithMetadata(map[string]string{"User": "x"}))
	return rpcError(err, codes.InvalidArgument, "INVALID_REQUEST")
}

func (a *agent) batchCompleted() error {
	reply, err := a.client.CallTools(context.Background(), []llmworker.Call{
		call("a", "echo", `{"text":"one"}`),
		call("b", "echo", `{"text":"two"}`),
	})
	if err != nil {
		return err
	}
	results := reply.Completed
	if ids := resultIDs(results); !slices.Equal(ids, []string{"a", "b"}) {
		return fmt.Errorf("outcome %v, want completed with results a, b", reply)
	}
	return errors.Join(resultOK(results[0], "one"), resultOK(results[1], "two"))
}

func (a *agent) batchPaused() error {
	for _, input := range []string{`{"key":"a","value":"1"}`, `{"key":"b","value":"2"}`} {
		reply, err := a.client.CallTool(context.Background(), "kv_set", json.RawMessage(input))
		if err != nil || reply.Output != "ok" {
			return fmt.Errorf("kv_set %s: %v err %v", input, reply, err)
		}
	}
	calls := []llmworker.Call{
		call("c1", "echo", `{"text":"hi"}`),
		call("c2", "no_such_tool", "{}"),
		call("c3", "echo", "{}"),
		call("c4", "kv_delete", `{"key":"a"}`),
		call("c5", "kv_delete", `{"key":"b"}`),
		call("c6", "kv_delete", `{"key":"c"}`),
		{ID: "c7", Name: "whoami", Input: json.RawMessage("{}"), Metadata: map[string]string{"user": "ada"}},
	}
	reply, err := a.client.CallTools(context.Background(), calls)
	if err != nil {
		return err
	}
	paused := reply.Paused
	if paused == nil {
		return fmt.Errorf("outcome %v, want paused", reply)
	}
	if paused.ResumeToken == "" || paused.Reason == "" || paused.PausedCallId != "c4" ||
		!paused.ExpireTime.AsTime().After(time.Now()) {
		return fmt.Errorf("resume_token %q reason %q paused_call_id %q expire_time %v, want a token, a reason, c4 and a future time",
			paused.ResumeToken, paused.Reason, paused.PausedCallId, paused.ExpireTime.AsTime())
	}
	var pending []*pb.PendingCall
	for _, c := range calls {
		if c.ID != "c2" {
			pending = append(pending, &pb.PendingCall{CallId: c.ID, Name: c.Name, InputJson: string(c.Input.(json.RawMessage)),
				AwaitingApproval: c.Name == "kv_delete"})
		}
	}
	if !slices.EqualFunc(paused.PendingCalls, pending, func(got, want *pb.PendingCall) bool { return proto.Equal(got, want) }) {
		return fmt.Errorf("pending_calls %v, want %v", paused.PendingCalls, pending)
	}
	if ids := resultIDs(paused.Results); !slices.Equal(ids, []string{"c2"}) {
		return fmt.Errorf("results for %v, want c2 only", ids)
	}
	if err := resultError(paused.Results[0], codes.NotFound, "TOOL_NOT_FOUND"); err != nil {
		return err
	}
	if message := paused.Results[0].Error.Message; message != "Tool 'no_such_tool' not found" {
		return fmt.Errorf("result c2: error.message %q", message)
	}
	a.resumeToken = paused.ResumeToken
	a.decisions = []llmworker.Decision{
		llmworker.Approve("c4"),
		llmworker.Deny("c5", "not this one"),
		llmworker.ApproveWithInput("c6", json.RawMessage(`{"key":"b"}`)),
	}
	return nil
}

func (a *agent) batchResumed() error {
	reply, err := a.client.Resume(context.Background(), a.resumeToken, a.decisions...)
	if err != nil {
		return err
	}
	results := reply.Completed
	if ids := resultIDs(results); !slices.Equal(ids, []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7"}) {
		return fmt.Errorf("outcome %v, want completed with results c1..c7", reply)
	}
	c3, c5, c7 := results[2], results[4], results[6]
	if err := errors.Join(
		resultOK(results[0], "hi"),
		resultError(results[1], codes.NotFound, "TOOL_NOT_FOUND"),
		resultError(c3, codes.InvalidArgument, "TOOL_INVALID_ARGUMENT"),
		resultOK(results[3], "deleted"),
		resultError(c5, codes.PermissionDenied, "CALL_DENIED"),
		resultOK(results[5], "deleted"),
	); err != nil {
		return err
	}
	// The output is the text the model reads; the status message has CallTool's prefix.
	const invalid = "Invalid argument: text: Field required"
	if c3.Error.Message != "Tool execution failed: "+invalid || c3.Output != invalid {
		return fmt.Errorf("result c3: error.message %q output %q, want %q and %q",
			c3.Error.Message, c3.Output, "Tool execution failed: "+invalid, invalid)
	}
	if !strings.Contains(c5.Output, "not this one") {
		return fmt.Errorf("result c5: output %q does not give the denial reason", c5.Output)
	}
	var got whoamiResult
	if c7.IsError || json.Unmarshal([]byte(c7.StructuredOutputJson), &got) != nil ||
		got.CallID != "c7" || !maps.Equal(got.Metadata, map[string]string{"user": "ada"}) {
		return fmt.Errorf("result c7: is_error=%v structured_output_json %q, want call_id c7 and metadata user=ada",
			c7.IsError, c7.StructuredOutputJson)
	}
	_, err = a.client.CallTool(context.Background(), "kv_get", map[string]string{"key": "b"})
	if err := rpcError(err, codes.Unknown, "TOOL_EXECUTION_FAILED"); err != nil {
		return fmt.Errorf("kv_get b after the batch: %w", err)
	}
	return nil
}

func (a *agent) tokenSingleUse() error {
	_, err := a.client.Resume(context.Background(), a.resumeToken, a.decisions...)
	return rpcError(err, codes.NotFound, "RESUME_TOKEN_UNKNOWN")
}

func (a *agent) duplicateCallIDs() error {
	for _, batch := range []struct {
		what  string
		calls []llmworker.Call
	}{
		{"two calls with id d", []llmworker.Call{call("d", "echo", `{"text":"1"}`), call("d", "echo", `{"text":"2"}`)}},
		{"a call with an empty id", []llmworker.Call{call("", "echo", `{"text":"1"}`)}},
	} {
		_, err := a.client.CallTools(context.Background(), batch.calls)
		if err := rpcError(err, codes.InvalidArgument, "INVALID_REQUEST"); err != nil {
			return fmt.Errorf("%s: %w", batch.what, err)
		}
	}
	return nil
}
