package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// unknownBearer is a bearer token no --auth-tokens file of the tests holds.
const unknownBearer = "not-a-known-token-at-all"

// authScope is the sorted -tools list, checked with -token and -forbidden: a token, names
// with echo among them (the call check calls it), and a forbidden tool outside them. Its
// errors are usage errors.
func authScope(token, tools, forbidden string) ([]string, error) {
	if token == "" {
		return nil, errors.New("-token TOKEN is required")
	}
	if tools == "" {
		return nil, errors.New("-tools a,b,c is required")
	}
	names := strings.Split(tools, ",")
	if slices.Contains(names, "") {
		return nil, fmt.Errorf("-tools %q: an empty name", tools)
	}
	if !slices.Contains(names, "echo") {
		return nil, fmt.Errorf("-tools %q: echo must be among them", tools)
	}
	if forbidden == "" {
		return nil, errors.New("-forbidden TOOL is required")
	}
	if slices.Contains(names, forbidden) {
		return nil, fmt.Errorf("-forbidden %s is among -tools", forbidden)
	}
	slices.Sort(names)
	return names, nil
}

// authChecker runs the caller-token checks against a server started with --auth-tokens:
// anonymous sends no token, unknown a token the server does not know, caller the token.
type authChecker struct {
	anonymous, unknown, caller *llmworker.Client
	tools                      []string
	forbidden                  string
}

// runAuth checks a server started with --auth-tokens, where token may call exactly tools
// (echo among them) and not forbidden: health without a token, no token and an unknown token
// refused (UNAUTHENTICATED), the listing showing the token's tools only, echo answering, and
// CallTool and CallTools of forbidden refused (PERMISSION_DENIED, TOOL_FORBIDDEN, naming it).
func runAuth(target, token string, tools []string, forbidden string) error {
	var clients []*llmworker.Client
	for _, token := range []string{"", unknownBearer, token} {
		client, err := llmworker.Dial(target, llmworker.WithToken(token),
			llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
		if err != nil {
			return fmt.Errorf("auth connect: %w", err)
		}
		defer client.Close()
		clients = append(clients, client)
	}
	a := &authChecker{anonymous: clients[0], unknown: clients[1], caller: clients[2], tools: tools, forbidden: forbidden}
	return runChecks("auth", []check{
		{"health", "health needs no token", a.health},
		{"no token", "no token refused", a.noToken},
		{"unknown token", "unknown token refused", a.unknownToken},
		{"invalid request", "invalid request without a token refused", a.invalidWithoutToken},
		{"listing", "listing shows the token's tools", a.listing},
		{"call", "call allowed", a.callAllowed},
		{"forbidden", "forbidden tool refused", a.forbiddenTool},
		{"batch", "batch with a forbidden call refused", a.forbiddenBatch},
	})
}

// health: grpc.health.v1.Health/Check, without metadata, answers SERVING.
func (a *authChecker) health() error {
	reply, err := healthpb.NewHealthClient(a.anonymous.Conn()).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("Health/Check: %w", err)
	}
	if reply.Status != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("Health/Check: %v, want SERVING", reply.Status)
	}
	return nil
}

// noToken: the listing without metadata fails UNAUTHENTICATED.
func (a *authChecker) noToken() error {
	_, err := a.anonymous.ListDefinitions(context.Background())
	return rpcError(err, codes.Unauthenticated, "UNAUTHENTICATED")
}

// unknownToken: the listing with a token the server does not know fails UNAUTHENTICATED.
func (a *authChecker) unknownToken() error {
	_, err := a.unknown.ListDefinitions(context.Background())
	return rpcError(err, codes.Unauthenticated, "UNAUTHENTICATED")
}

// invalidWithoutToken: a CallTool without a name and without a token fails UNAUTHENTICATED,
// not INVALID_ARGUMENT: the caller is checked before the request is read.
func (a *authChecker) invalidWithoutToken() error {
	_, err := a.anonymous.Service().CallTool(context.Background(), &pb.CallToolRequest{})
	return rpcError(err, codes.Unauthenticated, "UNAUTHENTICATED")
}

// listing: with the token, the listing has exactly the tools it may call, sorted, and its
// fingerprint answers unchanged.
func (a *authChecker) listing() error {
	ctx := context.Background()
	listed, err := a.caller.ListDefinitions(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(listed.Tools))
	for _, definition := range listed.Tools {
		names = append(names, definition.Name)
	}
	if !slices.Equal(names, a.tools) {
		return fmt.Errorf("names %v, want %v", names, a.tools)
	}
	if listed.Fingerprint == "" {
		return errors.New("no fingerprint")
	}
	again, err := a.caller.Service().ListDefinitionsSorted(ctx, &pb.ListDefinitionsSortedRequest{KnownFingerprint: listed.Fingerprint})
	if err != nil || !again.Unchanged || len(again.Definitions) != 0 {
		return fmt.Errorf("with known fingerprint %s: unchanged=%v definitions=%d err=%v",
			listed.Fingerprint, again.GetUnchanged(), len(again.GetDefinitions()), err)
	}
	return nil
}

// callAllowed: with the token, echo answers.
func (a *authChecker) callAllowed() error {
	reply, err := a.caller.CallTool(context.Background(), "echo", map[string]string{"text": "auth"})
	if err != nil || reply.Output != "auth" {
		return fmt.Errorf("echo: %v err %v, want \"auth\"", reply, err)
	}
	return nil
}

// forbiddenError verifies a TOOL_FORBIDDEN refusal (PERMISSION_DENIED) naming the forbidden tool.
func (a *authChecker) forbiddenError(err error) error {
	failed, err := failure(err, codes.PermissionDenied, "TOOL_FORBIDDEN")
	if err != nil {
		return err
	}
	if tool := failed.Metadata["tool"]; tool != a.forbidden {
		return fmt.Errorf("ErrorInfo metadata tool %q, want %q", tool, a.forbidden)
	}
	return nil
}

// forbiddenTool: with the token, CallTool of a tool outside its scope is refused.
func (a *authChecker) forbiddenTool() error {
	_, err := a.caller.CallTool(context.Background(), a.forbidden, nil)
	if err := a.forbiddenError(err); err != nil {
		return fmt.Errorf("CallTool %s: %w", a.forbidden, err)
	}
	return nil
}

// forbiddenBatch: with the token, CallTools with an allowed and a forbidden call is refused.
func (a *authChecker) forbiddenBatch() error {
	_, err := a.caller.CallTools(context.Background(), []llmworker.Call{
		call("a", "echo", `{"text":"x"}`),
		call("b", a.forbidden, "{}"),
	})
	if err := a.forbiddenError(err); err != nil {
		return fmt.Errorf("CallTools echo, %s: %w", a.forbidden, err)
	}
	return nil
}
