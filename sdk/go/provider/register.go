package provider

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// registration keeps the provider's tools registered with one registry.
type registration struct {
	target  string
	conn    *grpc.ClientConn
	client  pb.ToolRegistryClient
	bearer  string
	address string
	names   []string
	stop    context.CancelFunc
	done    chan struct{}
}

type registerSettings struct {
	token   string
	tls     *tls.Config
	renew   time.Duration
	address string
}

// RegisterOption configures Register.
type RegisterOption func(*registerSettings)

// WithToken is the registry's token (the server's $LLMWORKER_TOKEN, or a --provider-tokens
// identity's).
func WithToken(token string) RegisterOption { return func(s *registerSettings) { s.token = token } }

// WithTLS reaches the registry over TLS (a TCP --internal-address).
func WithTLS(config *tls.Config) RegisterOption { return func(s *registerSettings) { s.tls = config } }

// WithRenewEvery registers again this often (default 4 s, half the server's default
// --provider-lease): a restarted or replaced registry gets the tools back within it.
func WithRenewEvery(every time.Duration) RegisterOption {
	return func(s *registerSettings) { s.renew = every }
}

// WithAddress is the address the registry calls the tools at (default: Serve's listener).
func WithAddress(address string) RegisterOption {
	return func(s *registerSettings) { s.address = address }
}

// Register registers every tool with the registry at target (its internal listener, e.g.
// "unix:///run/user/1000/llmworker-1234.sock") once, then again every renewal until Stop,
// which unregisters them. The first registration's failure is returned (a typed
// llmworker error: RegistryLocked, DuplicateName, Unauthenticated…); later ones are logged
// and retried. Serve must have begun (or WithAddress given).
func (p *Provider) Register(ctx context.Context, target string, options ...RegisterOption) error {
	settings := registerSettings{renew: 4 * time.Second, address: p.Address()}
	for _, option := range options {
		option(&settings)
	}
	if settings.address == "" {
		return fmt.Errorf("provider: nothing to register yet: call Serve first, or give WithAddress")
	}
	if settings.renew <= 0 {
		return fmt.Errorf("provider: WithRenewEvery(%v): renew every positive duration, e.g. 4s", settings.renew)
	}
	transport := insecure.NewCredentials()
	if settings.tls != nil {
		transport = credentials.NewTLS(settings.tls)
	}
	// Reconnect twice a renewal rather than after gRPC's growing backoff (up to 2 minutes),
	// so a restarted registry gets the tools back at the next renewal or the one after.
	retry := backoff.DefaultConfig
	retry.BaseDelay, retry.MaxDelay = settings.renew/2, settings.renew/2
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(transport),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: retry, MinConnectTimeout: max(settings.renew, time.Second)}))
	if err != nil {
		return fmt.Errorf("provider: registry %s: %w", target, err)
	}
	link := &registration{target: target, conn: conn, client: pb.NewToolRegistryClient(conn),
		address: settings.address, done: make(chan struct{})}
	if settings.token != "" {
		link.bearer = "Bearer " + settings.token
	}
	for name := range p.tools {
		link.names = append(link.names, name)
	}
	if err := link.register(ctx, p); err != nil {
		link.unregister(ctx) // what was accepted before the refusal goes again
		_ = conn.Close()
		return err
	}
	renewing, stop := context.WithCancel(context.Background())
	link.stop = stop
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped { // Stop came while registering: leave at once
		stop()
		link.unregister(ctx)
		_ = conn.Close()
		return fmt.Errorf("provider: stopped while registering with %s", target)
	}
	p.links = append(p.links, link)
	go link.renew(renewing, p, settings.renew)
	return nil
}

func (r *registration) outgoing(ctx context.Context) context.Context {
	if r.bearer == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", r.bearer)
}

// register registers every tool once (an identical registration renews it).
func (r *registration) register(ctx context.Context, p *Provider) error {
	for _, name := range r.names {
		_, err := r.client.RegisterTool(r.outgoing(ctx), &pb.RegisterToolRequest{
			Definition: p.tools[name].definition, ProviderTarget: r.address})
		if err != nil {
			return fmt.Errorf("provider: register %s with %s: %w", name, r.target, llmworker.FromError(err))
		}
	}
	return nil
}

func (r *registration) renew(ctx context.Context, p *Provider, every time.Duration) {
	defer close(r.done)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	failing := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		attempt, cancel := context.WithTimeout(ctx, max(every, time.Second))
		err := r.register(attempt, p)
		cancel()
		switch {
		case err == nil && failing != "":
			log.Printf("llmworker provider: registered again with %s", r.target)
			failing = ""
		case err != nil && ctx.Err() == nil && status.Code(err).String() != failing:
			log.Printf("llmworker provider: %v; retrying every %v", err, every)
			failing = status.Code(err).String()
		}
	}
}

// leave stops renewing and unregisters the tools (bounded by ctx).
func (r *registration) leave(ctx context.Context) {
	r.stop()
	<-r.done
	r.unregister(ctx)
	_ = r.conn.Close()
}

// unregister removes every tool from the registry, best effort (one it never took is
// refused, and nothing changes).
func (r *registration) unregister(ctx context.Context) {
	for _, name := range r.names {
		_, _ = r.client.UnregisterTool(r.outgoing(ctx), &pb.UnregisterToolRequest{Name: name, ProviderTarget: r.address})
	}
}
