package llmworker

import (
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/health" // client-side health checks for WithBalancing
	"google.golang.org/grpc/resolver"
)

// The service configs of the README's replicas page: round robin over every address with
// client-side health checks and, for WithRetries, the Python client's retry policy (up to 5
// attempts of a call that failed UNAVAILABLE), for the RPCs that run nothing but the one
// tool they name: never a batch (CallTools, ResumeBatch, RunProviderToolCalls).
const (
	balancedConfig = `{"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": "llmworker.v1.ToolService"}}`
	retryingConfig = `{"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": "llmworker.v1.ToolService"}, "methodConfig": [{"name": [{"service": "llmworker.v1.ToolService", "method": "GetTool"}, {"service": "llmworker.v1.ToolService", "method": "CallTool"}, {"service": "llmworker.v1.ToolService", "method": "CallToolStream"}, {"service": "llmworker.v1.ToolService", "method": "ListDefinitionsSorted"}, {"service": "llmworker.v1.ToolService", "method": "WatchDefinitions"}, {"service": "llmworker.v1.ToolService", "method": "SearchTools"}, {"service": "llmworker.v1.ToolService", "method": "ListPausedBatches"}], "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`
	retryConfig    = `{"methodConfig": [{"name": [{"service": "llmworker.v1.ToolService", "method": "GetTool"}, {"service": "llmworker.v1.ToolService", "method": "CallTool"}, {"service": "llmworker.v1.ToolService", "method": "CallToolStream"}, {"service": "llmworker.v1.ToolService", "method": "ListDefinitionsSorted"}, {"service": "llmworker.v1.ToolService", "method": "WatchDefinitions"}, {"service": "llmworker.v1.ToolService", "method": "SearchTools"}, {"service": "llmworker.v1.ToolService", "method": "ListPausedBatches"}], "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`
)

// WithBalancing spreads calls over every replica the target names (dns:///host:port, or
// ipv4:10.0.0.1:7000,10.0.0.2:7000) with round_robin and client-side health checks: a
// replica that reports NOT_SERVING (draining) or cannot be reached gets no new calls.
func WithBalancing() Option { return func(s *settings) { s.balanced = true } }

// WithRetries runs a call again, up to 5 attempts, when it failed UNAVAILABLE (a replica that
// went away with the call in flight: it may have run). It applies to CallTool,
// CallToolStream, listings, search and GetTool, never to batches. Give it to a client that
// calls only tools safe to run twice, annotated read-only or idempotent, as the Python
// client does; keep another client without it for the rest.
func WithRetries() Option { return func(s *settings) { s.retries = true } }

// serviceConfig is the default service config of a client with these settings ("": none).
func (s *settings) serviceConfig() string {
	switch {
	case s.balanced && s.retries:
		return retryingConfig
	case s.balanced:
		return balancedConfig
	case s.retries:
		return retryConfig
	}
	return ""
}

// addressLists resolves gRPC's ipv4: and ipv6: targets (every address of the list, as the
// C core, so Python, and grpc-js read them), which grpc-go does not know (grpc/grpc-go#3982).
func addressLists() grpc.DialOption {
	return grpc.WithResolvers(addressList{"ipv4"}, addressList{"ipv6"})
}

type addressList struct{ scheme string }

func (b addressList) Scheme() string { return b.scheme }

func (b addressList) Build(target resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	var endpoints []resolver.Endpoint
	for _, address := range strings.Split(target.Endpoint(), ",") {
		if _, _, err := net.SplitHostPort(address); err != nil && strings.Contains(err.Error(), "missing port") {
			address = net.JoinHostPort(strings.Trim(address, "[]"), "443") // the C core's default
		}
		if _, _, err := net.SplitHostPort(address); err != nil {
			return nil, fmt.Errorf("llmworker: %s: target address %q: %w", b.scheme, address, err)
		}
		endpoints = append(endpoints, resolver.Endpoint{Addresses: []resolver.Address{{Addr: address}}})
	}
	// The list never changes: an error (the balancer refusing it) has nothing to retry.
	_ = cc.UpdateState(resolver.State{Endpoints: endpoints})
	return fixed{}, nil
}

type fixed struct{}

func (fixed) ResolveNow(resolver.ResolveNowOptions) {}
func (fixed) Close()                                {}
