package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
	"github.com/llmworker/llmworker/sdk/go/provider"
)

// The tools the provider serves.
const (
	reverseName = "go_reverse"
	whoamiName  = "go_whoami"
)

// reverseInput is go_reverse's input: the SDK refuses input without text (TOOL_INVALID_ARGUMENT,
// "text: Field required"), as the server's Python tools do.
type reverseInput struct {
	Text string `json:"text"`
}

// whoamiOutput is go_whoami's structured result: the call id and metadata it received.
type whoamiOutput struct {
	CallID   string            `json:"call_id"`
	Metadata map[string]string `json:"metadata"`
}

// goTools are the tools the provider serves, defined with the SDK's provider package.
func goTools() []provider.Definition {
	return []provider.Definition{
		provider.Tool(reverseName, "Reverse a text (implemented in Go).",
			func(_ context.Context, in reverseInput) (string, error) {
				runes := []rune(in.Text)
				slices.Reverse(runes)
				return string(runes), nil
			}),
		provider.Tool(whoamiName, "Report the call id and metadata the provider received",
			func(ctx context.Context, _ struct{}) (whoamiOutput, error) {
				call := provider.CallOf(ctx)
				metadata := call.Metadata
				if metadata == nil {
					metadata = map[string]string{} // {} rather than null
				}
				return whoamiOutput{call.ID, metadata}, nil
			}),
	}
}

// servedDefinition is the definition of the Go tool name, as the provider serves it.
func servedDefinition(name string) *pb.ToolDefinition {
	for _, tool := range goTools() {
		if tool.Name() == name {
			return tool.Message()
		}
	}
	panic("no Go tool " + name)
}

// serveTools serves the Go tools on listener with the SDK's provider: with health (what
// Serve does) or, noHealth, on a server of their own without grpc.health.v1 (the server
// then checks the provider with GetTool). stop stops serving.
func serveTools(listener net.Listener, noHealth bool) (tools *provider.Provider, stop func(), err error) {
	tools, err = provider.New(goTools()...)
	if err != nil {
		return nil, nil, err
	}
	if !noHealth {
		go func() { _ = tools.Serve(listener) }()
		return tools, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tools.Stop(ctx)
		}, nil
	}
	server := grpc.NewServer()
	pb.RegisterToolServiceServer(server, tools)
	go func() { _ = server.Serve(listener) }()
	return tools, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tools.Stop(ctx) // unregisters
		server.GracefulStop()
	}, nil
}

// runProvider serves the tools on 127.0.0.1:port (0: any port) and registers them with each
// comma-separated target of registries through the SDK (which renews every registration and
// unregisters on SIGTERM). With renew 0, once: any failure ends it. With renew, a target that
// failed is asked again every renew, and "READY <port>" comes once every target accepted.
func runProvider(registries, token string, port int, renew time.Duration, noHealth bool) error {
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
	tools, stopServing, err := serveTools(listener, noHealth)
	if err != nil {
		return err
	}
	defer stopServing()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	options := []provider.RegisterOption{provider.WithToken(token), provider.WithAddress(listener.Addr().String())}
	ready := func() { fmt.Printf("READY %d\n", listener.Addr().(*net.TCPAddr).Port) }
	if renew == 0 {
		for _, target := range targets {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := tools.Register(ctx, target, options...)
			cancel()
			if err != nil {
				return err
			}
		}
		ready()
		<-stop
		return nil
	}

	options = append(options, provider.WithRenewEvery(renew))
	trouble := map[string]string{} // what was last logged about each target not yet accepted
	ticker := time.NewTicker(renew)
	defer ticker.Stop()
	for len(targets) > 0 {
		var pending []string
		for _, target := range targets {
			ctx, cancel := context.WithTimeout(context.Background(), max(renew, time.Second))
			err := tools.Register(ctx, target, options...)
			cancel()
			if err == nil {
				if trouble[target] != "" {
					fmt.Fprintf(os.Stderr, "registered with %s\n", target)
				}
				continue
			}
			if refusedForGood(err) { // the same token and tools: refused by all
				return fmt.Errorf("%w (refused for good: check the token, and that the registry is not locked or full)", err)
			}
			if kind := troubleKind(err); kind != trouble[target] {
				fmt.Fprintf(os.Stderr, "%v; retrying every %v\n", err, renew)
				trouble[target] = kind
			}
			pending = append(pending, target)
		}
		if targets = pending; len(targets) == 0 {
			break
		}
		select {
		case <-stop:
			return nil
		case <-ticker.C:
		}
	}
	ready() // the SDK renews every registration from now on
	<-stop
	return nil
}

// troubleKind is an error's status code and reason, to log each kind of trouble once.
func troubleKind(err error) string {
	var failed *llmworker.Failure
	if errors.As(err, &failed) {
		return failed.Code.String() + "/" + failed.Reason
	}
	return err.Error()
}

// refusedForGood is a refusal that asking again cannot change: a wrong token, a locked or full
// registry, a definition the server does not take (as the server's own provider mode).
func refusedForGood(err error) bool {
	return errors.As(err, &llmworker.Unauthenticated{}) || errors.As(err, &llmworker.RegistryLocked{}) ||
		errors.As(err, &llmworker.InvalidRequest{}) || errors.As(err, &llmworker.RegistryFull{})
}
