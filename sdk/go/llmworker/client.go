// Package llmworker is the Go client of an llmworker server: typed errors, calls, streams,
// batches with approvals, listings in provider formats, search and watch, over gRPC.
//
//	client, err := llmworker.Dial("127.0.0.1:50051", llmworker.WithToken(token))
//	if err != nil { … }
//	defer client.Close()
//	result, err := client.CallTool(ctx, "echo", map[string]any{"text": "hi"})
//
// The generated messages and stubs are in the llmworkerv1 package beside this one; Service
// gives the stub for anything this package does not wrap.
package llmworker

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// Version is the wire contract this package speaks (the proto package's version).
const Version = "v1"

// MaxMessageBytes is the default size limit of a message either way (the server's
// --max-message-bytes default).
const MaxMessageBytes = 4 << 20

// Client is a connection to one llmworker server (or, with WithBalancing, its replicas).
// It is safe for concurrent use.
type Client struct {
	conn  *grpc.ClientConn
	tools pb.ToolServiceClient
}

type settings struct {
	tls      *tls.Config
	rootCA   string
	token    string
	balanced bool
	retries  bool
	extra    []grpc.DialOption
}

// Option configures Dial.
type Option func(*settings)

// WithTLS connects over TLS with config (its RootCAs, Certificates for mutual TLS).
func WithTLS(config *tls.Config) Option { return func(s *settings) { s.tls = config } }

// WithRootCA connects over TLS, trusting the PEM certificates of file.
func WithRootCA(file string) Option { return func(s *settings) { s.rootCA = file } }

// WithToken sends token as "authorization: Bearer" with every call (a server with
// --auth-tokens needs one).
func WithToken(token string) Option { return func(s *settings) { s.token = token } }

// WithDialOptions adds gRPC dial options (interceptors, keepalive…), after the SDK's own:
// grpc.WithDefaultServiceConfig here replaces what WithBalancing and WithRetries set.
func WithDialOptions(options ...grpc.DialOption) Option {
	return func(s *settings) { s.extra = append(s.extra, options...) }
}

// Dial makes a client of target; plaintext unless WithTLS or WithRootCA says otherwise. It
// connects lazily: the first call says whether the server is there.
func Dial(target string, options ...Option) (*Client, error) {
	var s settings
	for _, option := range options {
		option(&s)
	}
	if strings.ContainsAny(s.token, "\r\n") {
		return nil, fmt.Errorf("llmworker: the token holds a line break; give the token alone")
	}
	transport, err := s.credentials()
	if err != nil {
		return nil, err
	}
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(transport),
		addressLists(),
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes)),
	}
	if s.token != "" {
		bearer := "Bearer " + s.token
		dial = append(dial,
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, request, reply any,
				conn *grpc.ClientConn, invoke grpc.UnaryInvoker, options ...grpc.CallOption) error {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", bearer)
				return invoke(ctx, method, request, reply, conn, options...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc,
				conn *grpc.ClientConn, method string, stream grpc.Streamer,
				options ...grpc.CallOption) (grpc.ClientStream, error) {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", bearer)
				return stream(ctx, desc, conn, method, options...)
			}))
	}
	if config := s.serviceConfig(); config != "" {
		dial = append(dial, grpc.WithDefaultServiceConfig(config))
	}
	conn, err := grpc.NewClient(target, append(dial, s.extra...)...)
	if err != nil {
		return nil, fmt.Errorf("llmworker: %s: %w", target, err)
	}
	return &Client{conn: conn, tools: pb.NewToolServiceClient(conn)}, nil
}

func (s *settings) credentials() (credentials.TransportCredentials, error) {
	if s.rootCA == "" && s.tls == nil {
		return insecure.NewCredentials(), nil
	}
	config := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.tls != nil {
		config = s.tls.Clone()
	}
	if s.rootCA != "" {
		pem, err := os.ReadFile(s.rootCA)
		if err != nil {
			return nil, fmt.Errorf("llmworker: the root CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("llmworker: %s holds no PEM certificate", s.rootCA)
		}
		config.RootCAs = pool
	}
	return credentials.NewTLS(config), nil
}

// Close closes the connection; calls in flight fail.
func (c *Client) Close() error { return c.conn.Close() }

// Service is the generated ToolService stub on this client's connection.
func (c *Client) Service() pb.ToolServiceClient { return c.tools }

// Conn is this client's connection, for the server's other services (grpc.health.v1,
// reflection) with the same TLS, token and balancing.
func (c *Client) Conn() grpc.ClientConnInterface { return c.conn }
