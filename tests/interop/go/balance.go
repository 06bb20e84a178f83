package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
	"unicode"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking (healthCheckConfig)
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	pb "llmworker/interop/gen/llmworker/v1"
)

// The service configs of llmworker._client.balancing, byte for byte: SERVICE_CONFIG for every call,
// RETRYING_SERVICE_CONFIG for calls to tools annotated idempotent or read-only.
const (
	serviceConfig          = `{"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": "llmworker.v1.ToolService"}}`
	retryingServiceConfig  = `{"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": "llmworker.v1.ToolService"}, "methodConfig": [{"name": [{"service": "llmworker.v1.ToolService"}], "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`
	balanceCallTimeout     = 5 * time.Second
	balanceListTimeout     = 10 * time.Second
	balanceWhoamiInputJSON = `{}`
	balanceEchoInputJSON   = `{"text":"x"}`
)

// balanceTool is one tool the balance run calls, with the input it sends.
type balanceTool struct {
	name  string
	input string
}

// tally counts one tool's calls: how many started, succeeded, and failed by status code.
type tally struct {
	Retrying bool           `json:"retrying"`
	Calls    int            `json:"calls"`
	OK       int            `json:"ok"`
	Failed   map[string]int `json:"failed"`
}

// retryIsSafe is llmworker._client.balancing.retry_is_safe: a tool annotated idempotent or read-only
// may run again after UNAVAILABLE.
func retryIsSafe(definition *pb.ToolDefinition) bool {
	hints := definition.GetAnnotations()
	return hints.GetIdempotentHint() || hints.GetReadOnlyHint()
}

// codeName is the canonical name of a status code: UNAVAILABLE, DEADLINE_EXCEEDED, ...
func codeName(code codes.Code) string {
	var name strings.Builder
	previous := rune(0)
	for _, r := range code.String() {
		if unicode.IsUpper(r) && unicode.IsLower(previous) {
			name.WriteByte('_')
		}
		name.WriteRune(unicode.ToUpper(r))
		previous = r
	}
	return name.String()
}

// ipResolverBuilder resolves gRPC's ipv4: and ipv6: targets (ipv4:10.0.0.1:7000,10.0.0.2:7000:
// every address of the list, as C-core, so Python, and grpc-js read them), which grpc-go does
// not know (grpc/grpc-go#3982: it has dns:, unix: and passthrough: only).
type ipResolverBuilder struct{ scheme string }

func (b ipResolverBuilder) Scheme() string { return b.scheme }

func (b ipResolverBuilder) Build(target resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	var endpoints []resolver.Endpoint
	for _, address := range strings.Split(target.Endpoint(), ",") {
		if _, _, err := net.SplitHostPort(address); err != nil {
			return nil, fmt.Errorf("%s: target address %q: %w", b.scheme, address, err)
		}
		endpoints = append(endpoints, resolver.Endpoint{Addresses: []resolver.Address{{Addr: address}}})
	}
	// The list never changes: an error (the balancer refusing it) has nothing to retry.
	_ = cc.UpdateState(resolver.State{Endpoints: endpoints})
	return staticResolver{}, nil
}

type staticResolver struct{}

func (staticResolver) ResolveNow(resolver.ResolveNowOptions) {}
func (staticResolver) Close()                                {}

func dialBalanced(target, config string) (*grpc.ClientConn, error) {
	return grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithResolvers(ipResolverBuilder{"ipv4"}, ipResolverBuilder{"ipv6"}),
		grpc.WithDefaultServiceConfig(config),
	)
}

// runBalance calls whoami (read-only and idempotent: through the retrying connection) and
// echo (not annotated: through the plain one) from concurrency goroutines for seconds, over
// every replica target names, and prints the tallies as one JSON line.
func runBalance(target string, seconds float64, concurrency int) error {
	if concurrency < 1 || seconds <= 0 {
		return fmt.Errorf("balance: -seconds and -concurrency must be positive")
	}
	plain, err := dialBalanced(target, serviceConfig)
	if err != nil {
		return fmt.Errorf("balance: connect: %w", err)
	}
	defer plain.Close()
	retrying, err := dialBalanced(target, retryingServiceConfig)
	if err != nil {
		return fmt.Errorf("balance: connect: %w", err)
	}
	defer retrying.Close()

	ctx, cancel := context.WithTimeout(context.Background(), balanceListTimeout)
	listed, err := pb.NewToolServiceClient(plain).ListDefinitionsSorted(ctx, &pb.ListDefinitionsSortedRequest{})
	cancel()
	if err != nil {
		return fmt.Errorf("balance: list: %w", err)
	}
	clients := map[string]pb.ToolServiceClient{}
	tallies := map[string]*tally{}
	tools := []balanceTool{{"whoami", balanceWhoamiInputJSON}, {"echo", balanceEchoInputJSON}}
	for _, tool := range tools {
		for _, definition := range listed.Definitions {
			if definition.Name == tool.name {
				conn := plain
				if retryIsSafe(definition) {
					conn = retrying
				}
				clients[tool.name] = pb.NewToolServiceClient(conn)
				tallies[tool.name] = &tally{Retrying: conn == retrying, Failed: map[string]int{}}
			}
		}
		if clients[tool.name] == nil {
			return fmt.Errorf("balance: the server lists no tool %q (is it --demo?)", tool.name)
		}
	}

	var mutex sync.Mutex
	var group sync.WaitGroup
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for range concurrency {
		group.Go(func() {
			for time.Now().Before(end) {
				for _, tool := range tools {
					mutex.Lock()
					counts := tallies[tool.name]
					counts.Calls++
					mutex.Unlock()
					ctx, cancel := context.WithTimeout(context.Background(), balanceCallTimeout)
					_, err := clients[tool.name].CallTool(ctx, &pb.CallToolRequest{Name: tool.name, InputJson: tool.input})
					cancel()
					mutex.Lock()
					if err == nil {
						counts.OK++
					} else {
						counts.Failed[codeName(status.Code(err))]++
					}
					mutex.Unlock()
				}
			}
		})
	}
	group.Wait()
	line, err := json.Marshal(tallies)
	if err != nil {
		return fmt.Errorf("balance: %w", err)
	}
	fmt.Println(string(line))
	return nil
}
