package provider

import (
	"context"
	"fmt"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// Provider serves its tools (llmworker.v1.ToolService: GetTool, CallTool, CallToolStream,
// and gRPC health) and keeps them registered with registries.
type Provider struct {
	pb.UnimplementedToolServiceServer
	tools   map[string]Definition
	server  *grpc.Server
	health  *health.Server
	mu      sync.Mutex
	address string
	links   []*registration
	stopped bool
}

// New makes a provider of tools; an invalid tool or a name given twice is an error.
func New(tools ...Definition) (*Provider, error) {
	p := &Provider{tools: make(map[string]Definition, len(tools)), health: health.NewServer()}
	for _, tool := range tools {
		if tool.err != nil {
			return nil, tool.err
		}
		if _, taken := p.tools[tool.Name()]; taken {
			return nil, fmt.Errorf("provider: tool %s is defined twice", tool.Name())
		}
		p.tools[tool.Name()] = tool
	}
	return p, nil
}

// Serve answers the registries' calls on listener until Stop; its address is what Register
// tells them (a listener on 127.0.0.1:0 gives it a free port).
func (p *Provider) Serve(listener net.Listener, options ...grpc.ServerOption) error {
	p.mu.Lock()
	if p.server != nil {
		p.mu.Unlock()
		return fmt.Errorf("provider: already serving on %s", p.address)
	}
	p.server = grpc.NewServer(options...)
	p.address = listener.Addr().String()
	pb.RegisterToolServiceServer(p.server, p)
	healthpb.RegisterHealthServer(p.server, p.health)
	p.mu.Unlock()
	return p.server.Serve(listener)
}

// Address is where Serve listens ("" before it does).
func (p *Provider) Address() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.address
}

// Stop unregisters the tools from every registry (bounded by ctx), then lets the calls in
// flight finish and stops serving.
func (p *Provider) Stop(ctx context.Context) {
	p.mu.Lock()
	links, server := p.links, p.server
	p.links, p.stopped = nil, true
	p.mu.Unlock()
	for _, link := range links {
		link.leave(ctx)
	}
	p.health.Shutdown()
	if server == nil {
		return
	}
	stopped := make(chan struct{})
	go func() {
		server.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done(): // calls still running past ctx are cut
		server.Stop()
		<-stopped
	}
}

func (p *Provider) tool(name string) (Definition, error) {
	tool, found := p.tools[name]
	if !found {
		return Definition{}, status.Errorf(codes.NotFound, "Tool '%s' not found", name)
	}
	return tool, nil
}

// GetTool gives a tool's definition (the registry checks it before it registers the tool).
func (p *Provider) GetTool(_ context.Context, request *pb.GetToolRequest) (*pb.GetToolResponse, error) {
	tool, err := p.tool(request.GetName())
	if err != nil {
		return nil, err
	}
	return &pb.GetToolResponse{Definition: tool.definition}, nil
}

// CallTool runs a tool; the call's id and metadata are in its context (Call).
func (p *Provider) CallTool(ctx context.Context, request *pb.CallToolRequest) (*pb.CallToolResponse, error) {
	tool, err := p.tool(request.GetName())
	if err != nil {
		return nil, err
	}
	return tool.run(withCall(ctx, request, nil), []byte(request.GetInputJson()))
}

// CallToolStream runs a tool, sending the progress it reports (ReportProgress), then its
// result.
func (p *Provider) CallToolStream(request *pb.CallToolRequest, stream grpc.ServerStreamingServer[pb.CallToolEvent]) error {
	tool, err := p.tool(request.GetName())
	if err != nil {
		return err
	}
	var sending sync.Mutex
	done := false // once the handler returns, the stream is not to be used
	defer func() {
		sending.Lock()
		done = true
		sending.Unlock()
	}()
	report := func(progress *pb.ToolProgress) {
		sending.Lock()
		defer sending.Unlock()
		if !done {
			_ = stream.Send(&pb.CallToolEvent{Event: &pb.CallToolEvent_Progress{Progress: progress}})
		}
	}
	response, err := tool.run(withCall(stream.Context(), request, report), []byte(request.GetInputJson()))
	if err != nil {
		return err
	}
	sending.Lock()
	defer sending.Unlock()
	return stream.Send(&pb.CallToolEvent{Event: &pb.CallToolEvent_Result{Result: response}})
}

// Call is what a tool knows of the call it runs.
type Call struct {
	ID       string
	Metadata map[string]string
	report   func(*pb.ToolProgress)
}

type callKey struct{}

func withCall(ctx context.Context, request *pb.CallToolRequest, report func(*pb.ToolProgress)) context.Context {
	return context.WithValue(ctx, callKey{}, &Call{request.GetCallId(), request.GetMetadata(), report})
}

// CallOf is the call a tool's ctx belongs to (nil outside a call).
func CallOf(ctx context.Context) *Call {
	call, _ := ctx.Value(callKey{}).(*Call)
	return call
}

// ReportProgress tells a streaming caller how far the call has come (progress of total;
// total nil: unknown); a no-op for a caller that does not stream.
func ReportProgress(ctx context.Context, progress float64, total *float64, message string) {
	if call := CallOf(ctx); call != nil && call.report != nil {
		call.report(&pb.ToolProgress{Progress: progress, Total: total, Message: message})
	}
}
