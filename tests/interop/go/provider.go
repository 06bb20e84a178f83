package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "llmworker/interop/gen/llmworker/v1"
)

// The tools the provider serves.
const (
	reverseName = "go_reverse"
	whoamiName  = "go_whoami"
)

// toolError answers like an llmworker ToolError.InvalidArgument, so the front server (and
// its Python clients) rebuild the same variant.
func toolError(message string) error {
	st := status.New(codes.InvalidArgument, "Tool execution failed: Invalid argument: "+message)
	st, err := st.WithDetails(&errdetails.ErrorInfo{
		Reason:   "TOOL_INVALID_ARGUMENT",
		Domain:   "llmworker",
		Metadata: map[string]string{"tool": reverseName, "tool_error": message},
	})
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return st.Err()
}

type tools struct {
	pb.UnimplementedToolServiceServer
}

func (tools) CallTool(_ context.Context, request *pb.CallToolRequest) (*pb.CallToolResponse, error) {
	switch request.Name {
	case reverseName:
		return reverse(request)
	case whoamiName:
		return whoami(request), nil
	}
	return nil, status.Errorf(codes.NotFound, "Tool '%s' not found", request.Name)
}

// reverse reverses the input's text.
func reverse(request *pb.CallToolRequest) (*pb.CallToolResponse, error) {
	var arguments struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal([]byte(request.InputJson), &arguments); err != nil {
		return nil, toolError("input is not a JSON object with a string 'text'")
	}
	if arguments.Text == nil {
		return nil, toolError("text: Field required")
	}
	runes := []rune(*arguments.Text)
	for i, j := 0, len(runes)-1; i < j; i, j = i+1, j-1 {
		runes[i], runes[j] = runes[j], runes[i]
	}
	return &pb.CallToolResponse{Output: string(runes)}, nil
}

// whoami reports the call id and metadata the provider received, as JSON.
func whoami(request *pb.CallToolRequest) *pb.CallToolResponse {
	metadata := request.Metadata
	if metadata == nil {
		metadata = map[string]string{} // {} rather than null
	}
	// A string and a map of strings always marshal.
	output, _ := json.Marshal(struct {
		CallID   string            `json:"call_id"`
		Metadata map[string]string `json:"metadata"`
	}{request.CallId, metadata})
	return &pb.CallToolResponse{Output: string(output)}
}

// providerDefinitions are the tools the provider registers.
var providerDefinitions = []*pb.ToolDefinition{
	{
		Name:            reverseName,
		Description:     "Reverse a text (implemented in Go).",
		InputSchemaJson: `{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}`,
	},
	{
		Name:            whoamiName,
		Description:     "Report the call id and metadata the provider received",
		InputSchemaJson: `{"properties":{},"type":"object"}`,
	},
}

// runProvider serves the tools on 127.0.0.1:port (0: any port) and registers them with each
// comma-separated target of registries. With renew 0, once: any failure ends it. With renew,
// a target that failed is asked again every renew, "READY <port>" comes once every target
// accepted, and every target is asked again every renew from then on (a renewal; a
// restarted replica gets the tools back).
func runProvider(registries, token string, port int, renew time.Duration) error {
	var targets []string
	for _, target := range strings.Split(registries, ",") {
		if target = strings.TrimSpace(target); target != "" {
			targets = append(targets, target)
		}
	}
	if len(targets) == 0 {
		return fmt.Errorf("provider: -registry names no target")
	}
	if renew < 0 {
		return fmt.Errorf("provider: -renew %v is negative", renew)
	}
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	server := grpc.NewServer()
	pb.RegisterToolServiceServer(server, tools{})
	go func() { _ = server.Serve(listener) }()
	defer server.GracefulStop()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)

	registrations := make([]*registration, 0, len(targets))
	for _, target := range targets {
		r, err := newRegistration(target, token, listener.Addr().String(), renew)
		if err != nil {
			return err
		}
		defer r.conn.Close()
		registrations = append(registrations, r)
	}
	ready := func() { fmt.Printf("READY %d\n", listener.Addr().(*net.TCPAddr).Port) }
	if renew == 0 {
		for _, r := range registrations {
			if err := r.register(10 * time.Second); err != nil {
				return err
			}
		}
		ready()
		<-stop
		return nil
	}

	pending := len(registrations)
	ticker := time.NewTicker(renew)
	defer ticker.Stop()
	for {
		for _, r := range registrations {
			err := r.register(attemptTimeout(renew))
			if err == nil {
				r.note(nil)
				if !r.accepted {
					r.accepted = true
					pending--
					if pending == 0 {
						ready()
					}
				}
				continue
			}
			if pending > 0 && refusedForGood(err) { // the same token and tools: refused by all
				return fmt.Errorf("%w (refused for good: check the token, and that the registry is not locked or full)", err)
			}
			r.note(err)
		}
		select {
		case <-stop:
			return nil
		case <-ticker.C:
		}
	}
}

// attemptTimeout bounds one registration attempt (and one connection attempt) with -renew.
func attemptTimeout(renew time.Duration) time.Duration { return max(renew, time.Second) }

// registration registers the tools with one ToolRegistry target as provider.
type registration struct {
	target   string
	provider string
	token    string
	conn     *grpc.ClientConn
	registry pb.ToolRegistryClient
	trouble  string // what was last logged about this target ("": nothing wrong)
	accepted bool   // the target accepted the tools at least once
	renew    time.Duration
}

func newRegistration(target, token, provider string, renew time.Duration) (*registration, error) {
	options := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if renew > 0 {
		// Reconnect at every renewal rather than after gRPC's backoff (up to 2 minutes), so a
		// restarted replica gets the tools back within one interval.
		retry := backoff.DefaultConfig
		retry.BaseDelay, retry.MaxDelay = renew, renew
		options = append(options, grpc.WithConnectParams(grpc.ConnectParams{Backoff: retry, MinConnectTimeout: attemptTimeout(renew)}))
	}
	conn, err := grpc.NewClient(target, options...)
	if err != nil {
		return nil, fmt.Errorf("connect to registry %s: %w", target, err)
	}
	return &registration{target: target, provider: provider, token: token, conn: conn, registry: pb.NewToolRegistryClient(conn), renew: renew}, nil
}

// register registers every tool once (an identical registration is a renewal).
func (r *registration) register(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+r.token)
	for _, definition := range providerDefinitions {
		_, err := r.registry.RegisterTool(ctx, &pb.RegisterToolRequest{Definition: definition, ProviderTarget: r.provider})
		if err != nil {
			return fmt.Errorf("register %s with %s: %w", definition.Name, r.target, err)
		}
	}
	return nil
}

// note logs err to stderr when it is a new kind of trouble for this target (its status code
// and ErrorInfo reason), and that the target accepted the tools after trouble (err nil).
func (r *registration) note(err error) {
	if err == nil {
		if r.trouble != "" {
			if r.accepted {
				fmt.Fprintf(os.Stderr, "registered again with %s\n", r.target)
			} else {
				fmt.Fprintf(os.Stderr, "registered with %s\n", r.target)
			}
			r.trouble = ""
		}
		return
	}
	st := status.Convert(err)
	kind := st.Code().String() + "/" + errorReason(st)
	if kind != r.trouble {
		fmt.Fprintf(os.Stderr, "%v; retrying every %v\n", err, r.renew)
		r.trouble = kind
	}
}

// errorReason is the ErrorInfo reason of a status ("" without one).
func errorReason(st *status.Status) string {
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	return ""
}

// refusedForGood is a refusal that asking again cannot change: a wrong token, a locked or full
// registry, a definition the server does not take (as the server's own provider mode).
func refusedForGood(err error) bool {
	switch errorReason(status.Convert(err)) {
	case "UNAUTHENTICATED", "REGISTRY_LOCKED", "INVALID_REQUEST", "REGISTRY_FULL":
		return true
	}
	return false
}
