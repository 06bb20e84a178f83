package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// outsideGlobs is a tool name outside alpha's tools ("go_*").
const outsideGlobs = "other_tool"

// dialSettle is how long a connection the server should not have opened gets to be accepted.
const dialSettle = 200 * time.Millisecond

// dialCounter counts the connections to a listener that nothing should dial.
type dialCounter struct {
	listener net.Listener
	dials    atomic.Int64
}

func (d *dialCounter) serve() {
	for {
		conn, err := d.listener.Accept()
		if err != nil {
			return
		}
		d.dials.Add(1)
		_ = conn.Close()
	}
}

// identityChecker runs the provider-identity checks against a server's internal ToolRegistry
// (--provider-tokens): alpha may register "go_*" at "127.0.0.1:*" and may not lock; bravo may
// register anything anywhere.
type identityChecker struct {
	registry     pb.ToolRegistryClient
	alpha, bravo string
	target       string       // where the tools are served: 127.0.0.1:PORT
	elsewhere    string       // a target outside alpha's globs: 127.0.0.2:PORT
	untouched    *dialCounter // listening at elsewhere (nil when 127.0.0.2 cannot be bound)
}

// runIdentity serves the Go tools (with GetTool) on 127.0.0.1 and checks the provider
// identities of the registry: the owner registers, another identity can neither take the
// tool over nor unregister it, a tool or a target outside the identity's globs is refused
// (the target before anything dials it), the served definition is compared, LockRegistry needs
// may_lock, no token is refused, and the owner unregisters.
func runIdentity(registryTarget, alpha, bravo string) error {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	_, stop, err := serveTools(listener, false)
	if err != nil {
		return err
	}
	defer stop()

	port := strconv.Itoa(listener.Addr().(*net.TCPAddr).Port)
	c := &identityChecker{alpha: alpha, bravo: bravo, target: listener.Addr().String(),
		elsewhere: net.JoinHostPort("127.0.0.2", port)}
	if untouched, err := net.Listen("tcp", "127.0.0.2:0"); err == nil {
		c.untouched = &dialCounter{listener: untouched}
		c.elsewhere = untouched.Addr().String()
		go c.untouched.serve()
		defer untouched.Close()
	}

	conn, err := grpc.NewClient(registryTarget,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(withTimeout))
	if err != nil {
		return fmt.Errorf("identity connect to registry %s: %w", registryTarget, err)
	}
	defer conn.Close()
	c.registry = pb.NewToolRegistryClient(conn)
	return runChecks("identity", []check{
		{"owner registers", "owner registers", c.ownerRegisters},
		{"take over", "another identity cannot take over", c.noTakeOver},
		{"foreign unregister", "another identity cannot unregister", c.noForeignUnregister},
		{"tool globs", "tool outside globs refused", c.toolOutsideGlobs},
		{"target globs", "target outside globs refused before dial", c.targetOutsideGlobs},
		{"served definition", "served definition compared", c.definitionCompared},
		{"lock", "lock needs may_lock", c.lockNeedsMayLock},
		{"no token", "no token refused", c.noToken},
		{"owner unregisters", "owner unregisters", c.ownerUnregisters},
	})
}

// bearer is a context sending token as "authorization: Bearer <token>" metadata.
func bearer(token string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
}

// register asks the registry, as the identity of token, to take definition at target.
func (c *identityChecker) register(token string, definition *pb.ToolDefinition, target string) error {
	_, err := c.registry.RegisterTool(bearer(token), &pb.RegisterToolRequest{Definition: definition, ProviderTarget: target})
	return err
}

// unregister asks the registry, as the identity of token, to remove name registered at target.
func (c *identityChecker) unregister(token, name string) error {
	_, err := c.registry.UnregisterTool(bearer(token), &pb.UnregisterToolRequest{Name: name, ProviderTarget: c.target})
	return err
}

// refused verifies that err is code and reason, with a message holding want.
func refused(err error, code codes.Code, reason, want string) error {
	failed, err := failure(err, code, reason)
	if err != nil {
		return err
	}
	if message := failed.Message; !strings.Contains(message, want) {
		return fmt.Errorf("message %q does not hold %q", message, want)
	}
	return nil
}

// ownerRegisters: alpha registers go_reverse at its own target.
func (c *identityChecker) ownerRegisters() error {
	if err := c.register(c.alpha, servedDefinition(reverseName), c.target); err != nil {
		return fmt.Errorf("alpha RegisterTool %s at %s: %w", reverseName, c.target, err)
	}
	return nil
}

// noTakeOver: bravo registering the same definition at the same target is refused, naming
// the owner.
func (c *identityChecker) noTakeOver() error {
	err := c.register(c.bravo, servedDefinition(reverseName), c.target)
	return refused(err, codes.PermissionDenied, "PROVIDER_FORBIDDEN", "'alpha'")
}

// noForeignUnregister: bravo unregistering alpha's tool is refused, naming the owner.
func (c *identityChecker) noForeignUnregister() error {
	err := c.unregister(c.bravo, reverseName)
	return refused(err, codes.PermissionDenied, "PROVIDER_FORBIDDEN", "'alpha'")
}

// toolOutsideGlobs: alpha registering a name outside its tools is refused, naming the tool.
func (c *identityChecker) toolOutsideGlobs() error {
	other := servedDefinition(reverseName)
	other.Name = outsideGlobs
	err := c.register(c.alpha, other, c.target)
	if err := refused(err, codes.PermissionDenied, "PROVIDER_FORBIDDEN", "'"+outsideGlobs+"'"); err != nil {
		return err
	}
	if tool := llmworker.FromError(err).(llmworker.ProviderForbidden).Metadata["tool"]; tool != outsideGlobs {
		return fmt.Errorf("ErrorInfo metadata tool %q, want %q", tool, outsideGlobs)
	}
	return nil
}

// targetOutsideGlobs: alpha naming a target outside its targets is refused, and nothing
// dials that target.
func (c *identityChecker) targetOutsideGlobs() error {
	err := c.register(c.alpha, servedDefinition(whoamiName), c.elsewhere)
	if err := refused(err, codes.InvalidArgument, "INVALID_REQUEST", c.elsewhere); err != nil {
		return fmt.Errorf("target %s: %w", c.elsewhere, err)
	}
	if c.untouched != nil {
		time.Sleep(dialSettle)
		if dials := c.untouched.dials.Load(); dials != 0 {
			return fmt.Errorf("the server dialled %s %d times, want none", c.elsewhere, dials)
		}
	}
	return nil
}

// definitionCompared: a definition that differs from the one the provider serves is refused.
func (c *identityChecker) definitionCompared() error {
	edited := servedDefinition(whoamiName)
	edited.Description += " (edited)"
	err := c.register(c.alpha, edited, c.target)
	return refused(err, codes.InvalidArgument, "INVALID_REQUEST", "differ in description")
}

// lockNeedsMayLock: alpha, without may_lock, may not lock the registry.
func (c *identityChecker) lockNeedsMayLock() error {
	_, err := c.registry.LockRegistry(bearer(c.alpha), &pb.LockRegistryRequest{})
	return refused(err, codes.PermissionDenied, "PROVIDER_FORBIDDEN", "may_lock")
}

// noToken: each ToolRegistry RPC without a token is refused.
func (c *identityChecker) noToken() error {
	ctx := context.Background()
	_, registerErr := c.registry.RegisterTool(ctx, &pb.RegisterToolRequest{Definition: servedDefinition(reverseName), ProviderTarget: c.target})
	_, unregisterErr := c.registry.UnregisterTool(ctx, &pb.UnregisterToolRequest{Name: reverseName, ProviderTarget: c.target})
	_, lockErr := c.registry.LockRegistry(ctx, &pb.LockRegistryRequest{})
	var failures []error
	for _, rpc := range []struct {
		method string
		err    error
	}{{"RegisterTool", registerErr}, {"UnregisterTool", unregisterErr}, {"LockRegistry", lockErr}} {
		if err := rpcError(rpc.err, codes.Unauthenticated, "UNAUTHENTICATED"); err != nil {
			failures = append(failures, fmt.Errorf("%s: %w", rpc.method, err))
		}
	}
	return errors.Join(failures...)
}

// ownerUnregisters: alpha removes its tool.
func (c *identityChecker) ownerUnregisters() error {
	if err := c.unregister(c.alpha, reverseName); err != nil {
		return fmt.Errorf("alpha UnregisterTool %s: %w", reverseName, err)
	}
	return nil
}
