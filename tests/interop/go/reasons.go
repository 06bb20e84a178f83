package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
	"github.com/llmworker/llmworker/sdk/go/provider"
)

// reasonsChecker provokes the reasons the other checks do not reach, each as the SDK's typed
// error, against a server with the demo tools, an internal registry with its token, a
// countdown timeout under a second and room for one paused batch.
type reasonsChecker struct {
	client   *llmworker.Client
	registry pb.ToolRegistryClient // with the registry token (the SDK client's WithToken)
	server   *grpc.Server          // serves go_reverse and a Go echo, registered without renewals
	address  string
}

// runReasons checks DUPLICATE_NAME, TOOL_TIMEOUT, PAUSED_BATCHES_FULL,
// DEFINITION_FORMAT_UNSUPPORTED, PROVIDER_UNAVAILABLE and REGISTRY_LOCKED, in that order
// (the last locks the registry).
func runReasons(target, registryTarget, token string) error {
	client, err := llmworker.Dial(target, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("reasons connect: %w", err)
	}
	defer client.Close()
	internal, err := llmworker.Dial(registryTarget, llmworker.WithToken(token),
		llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("reasons connect to registry: %w", err)
	}
	defer internal.Close()
	tools, err := provider.New(reasonsTools()...)
	if err != nil {
		return err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	server := grpc.NewServer()
	pb.RegisterToolServiceServer(server, tools)
	go func() { _ = server.Serve(listener) }()
	defer server.Stop()
	r := &reasonsChecker{client: client, registry: pb.NewToolRegistryClient(internal.Conn()),
		server: server, address: listener.Addr().String()}
	return runChecks("reasons", []check{
		{"duplicate", "a name the server has refused (DUPLICATE_NAME)", r.duplicateName},
		{"timeout", "a tool over its timeout (TOOL_TIMEOUT)", r.toolTimeout},
		{"paused full", "a pause over --max-paused-batches (PAUSED_BATCHES_FULL)", r.pausedBatchesFull},
		{"strict", "a schema a strict format cannot take (DEFINITION_FORMAT_UNSUPPORTED)", r.formatUnsupported},
		{"provider gone", "a provider that went away (PROVIDER_UNAVAILABLE)", r.providerUnavailable},
		{"locked", "a registration after the lock (REGISTRY_LOCKED)", r.registryLocked},
	})
}

// tagsInput is go_tags's input: a map with free keys, which no strict format can take.
type tagsInput struct {
	Tags map[string]string `json:"tags"`
}

// reasonsTools are the Go tools, an echo (whose name the server's own echo has) and go_tags.
func reasonsTools() []provider.Definition {
	echo := provider.Tool("echo", "Send a text back (a Go tool whose name the server's own echo has)",
		func(_ context.Context, in reverseInput) (string, error) { return in.Text, nil })
	tags := provider.Tool("go_tags", "Count tags (a map of free keys)",
		func(_ context.Context, in tagsInput) (string, error) { return fmt.Sprint(len(in.Tags)), nil })
	return append(goTools(), echo, tags)
}

// register registers the Go tool name at the checker's provider.
func (r *reasonsChecker) register(name string) error {
	for _, tool := range reasonsTools() {
		if tool.Name() == name {
			_, err := r.registry.RegisterTool(context.Background(), &pb.RegisterToolRequest{
				Definition: tool.Message(), ProviderTarget: r.address})
			return err
		}
	}
	return fmt.Errorf("no Go tool %s", name)
}

// duplicateName: registering echo, a tool the server has of its own, is refused.
func (r *reasonsChecker) duplicateName() error {
	return rpcError(r.register("echo"), codes.AlreadyExists, "DUPLICATE_NAME")
}

// toolTimeout: a countdown far longer than its --tool-timeout ends DEADLINE_EXCEEDED /
// TOOL_TIMEOUT, long before the call's own deadline.
func (r *reasonsChecker) toolTimeout() error {
	started := time.Now()
	_, err := r.client.CallTool(context.Background(), "countdown", json.RawMessage(`{"n": 100, "delay": 0.1}`))
	if err := rpcError(err, codes.DeadlineExceeded, "TOOL_TIMEOUT"); err != nil {
		return err
	}
	if took := time.Since(started); took > 5*time.Second {
		return fmt.Errorf("the timeout came after %v", took)
	}
	return nil
}

// pausedBatchesFull: with room for one paused batch, a second pause is refused and nothing
// of it ran; denying the first frees the room.
func (r *reasonsChecker) pausedBatchesFull() error {
	ctx := context.Background()
	pause := func(key string) (*llmworker.Outcome, error) {
		return r.client.CallTools(ctx, []llmworker.Call{{ID: "d", Name: "kv_delete", Input: map[string]string{"key": key}}})
	}
	first, err := pause("first")
	if err != nil || first.Paused == nil {
		return fmt.Errorf("the first batch did not pause: %v %v", first, err)
	}
	_, err = pause("second")
	if err := rpcError(err, codes.ResourceExhausted, "PAUSED_BATCHES_FULL"); err != nil {
		return err
	}
	if _, err := r.client.Resume(ctx, first.Paused.ResumeToken, llmworker.Deny("d", "room for the next")); err != nil {
		return fmt.Errorf("deny the first batch: %w", err)
	}
	again, err := pause("third")
	if err != nil || again.Paused == nil {
		return fmt.Errorf("after a denial the batch did not pause: %v %v", again, err)
	}
	_, err = r.client.Resume(ctx, again.Paused.ResumeToken, llmworker.Deny("d", "done"))
	return err
}

// formatUnsupported: with go_tags registered, the listing in OpenAI's strict format is
// FAILED_PRECONDITION / DEFINITION_FORMAT_UNSUPPORTED naming the tool and the map's path;
// the plain format still lists it.
func (r *reasonsChecker) formatUnsupported() error {
	if err := r.register("go_tags"); err != nil {
		return fmt.Errorf("register go_tags: %w", err)
	}
	ctx := context.Background()
	_, err := r.client.ListDefinitionsIn(ctx, pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT_STRICT)
	failed, err := failure(err, codes.FailedPrecondition, "DEFINITION_FORMAT_UNSUPPORTED")
	if err != nil {
		return err
	}
	if !strings.Contains(failed.Message, "go_tags") || !strings.Contains(failed.Message, "tags") {
		return fmt.Errorf("the message %q does not name go_tags and its map", failed.Message)
	}
	plain, err := r.client.ListDefinitionsIn(ctx, pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT)
	if err != nil || !strings.Contains(string(plain), `"go_tags"`) {
		return fmt.Errorf("the plain format without go_tags: %v", err)
	}
	return nil
}

// providerUnavailable: go_reverse, registered, answers; once its provider stops serving, a
// call of it is UNAVAILABLE / PROVIDER_UNAVAILABLE (the lease keeps it listed meanwhile).
func (r *reasonsChecker) providerUnavailable() error {
	if err := r.register(reverseName); err != nil {
		return fmt.Errorf("register %s: %w", reverseName, err)
	}
	ctx := context.Background()
	reply, err := r.client.CallTool(ctx, reverseName, map[string]string{"text": "ab"})
	if err != nil || reply.Output != "ba" {
		return fmt.Errorf("%s before the provider stopped: %v %v", reverseName, reply, err)
	}
	r.server.Stop() // gone at once, without unregistering
	_, err = r.client.CallTool(ctx, reverseName, map[string]string{"text": "ab"})
	return rpcError(err, codes.Unavailable, "PROVIDER_UNAVAILABLE")
}

// registryLocked: after LockRegistry (the registry token may lock), RegisterTool is refused.
func (r *reasonsChecker) registryLocked() error {
	if _, err := r.registry.LockRegistry(context.Background(), &pb.LockRegistryRequest{}); err != nil {
		return fmt.Errorf("LockRegistry: %w", err)
	}
	return rpcError(r.register(whoamiName), codes.FailedPrecondition, "REGISTRY_LOCKED")
}
