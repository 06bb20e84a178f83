package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
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

func runProvider(registryTarget, token string) error {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	server := grpc.NewServer()
	pb.RegisterToolServiceServer(server, tools{})
	go func() { _ = server.Serve(listener) }()
	defer server.GracefulStop()

	conn, err := grpc.NewClient(registryTarget, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to registry: %w", err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	registry := pb.NewToolRegistryClient(conn)
	for _, definition := range []*pb.ToolDefinition{
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
	} {
		_, err = registry.RegisterTool(ctx, &pb.RegisterToolRequest{
			Definition:     definition,
			ProviderTarget: listener.Addr().String(),
		})
		if err != nil {
			return fmt.Errorf("register %s: %w", definition.Name, err)
		}
	}
	fmt.Printf("READY %d\n", listener.Addr().(*net.TCPAddr).Port)

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	return nil
}
