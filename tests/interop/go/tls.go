package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"

	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
)

// tlsCredentials are the SDK options interop tls dials with: none (plaintext) for -expect
// plaintext-refused (-ca is not read), else TLS verifying the server's certificate against
// the -ca PEM for the target's host (an IP SAN for 127.0.0.1) and presenting -cert/-key when
// they are given. Its errors are usage errors.
func tlsCredentials(target, ca, cert, key, expect string) ([]llmworker.Option, error) {
	switch expect {
	case "plaintext-refused":
		return nil, nil
	case "ok", "refused":
	default:
		return nil, fmt.Errorf("-expect %q: use ok, refused or plaintext-refused", expect)
	}
	if ca == "" {
		return nil, fmt.Errorf("-ca FILE is required with -expect %s", expect)
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("-cert and -key go together")
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("-target %q: %w", target, err)
	}
	if _, err := os.Stat(ca); err != nil {
		return nil, fmt.Errorf("-ca: %w", err)
	}
	// WithRootCA reads the CA file; WithTLS gives the rest (the name to verify, mTLS).
	config := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("-cert/-key: %w", err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return []llmworker.Option{llmworker.WithTLS(config), llmworker.WithRootCA(ca)}, nil
}

// runTLS checks a server with TLS on. ok: ListDefinitionsSorted lists echo and CallTool echo
// answers, over the TLS connection. refused (a client certificate missing or from another
// CA, for a server requiring one) and plaintext-refused: the handshake fails, so
// ListDefinitionsSorted fails UNAVAILABLE, though the target accepts TCP connections.
func runTLS(target string, transport []llmworker.Option, expect string) error {
	client, err := llmworker.Dial(target, append(transport, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))...)
	if err != nil {
		return fmt.Errorf("tls connect: %w", err)
	}
	defer client.Close()
	switch expect {
	case "refused":
		return tlsRefused(client, target, "refused")
	case "plaintext-refused":
		return tlsRefused(client, target, "plaintext refused")
	}
	listed, err := client.ListDefinitions(context.Background())
	if err != nil {
		return fmt.Errorf("tls listing: %w", err)
	}
	names := make([]string, 0, len(listed.Tools))
	for _, definition := range listed.Tools {
		names = append(names, definition.Name)
	}
	if !slices.Contains(names, "echo") {
		return fmt.Errorf("tls listing: names %v, want echo among them", names)
	}
	fmt.Println("OK tls listing")
	reply, err := client.CallTool(context.Background(), "echo", map[string]string{"text": "over tls"})
	if err != nil || reply.Output != "over tls" {
		return fmt.Errorf("tls call echo: %v err %v, want \"over tls\"", reply, err)
	}
	fmt.Println("OK tls call echo")
	return nil
}

// tlsRefused: ListDefinitionsSorted fails UNAVAILABLE. A target that refuses TCP would fail so
// too, so the target must first accept a TCP connection: the refusal is the handshake's.
func tlsRefused(client *llmworker.Client, target, check string) error {
	probe, err := net.DialTimeout("tcp", target, rpcTimeout)
	if err != nil {
		return fmt.Errorf("tls %s: nothing accepts connections on %s: %w", check, target, err)
	}
	probe.Close()
	_, err = client.ListDefinitions(context.Background())
	if err == nil {
		return fmt.Errorf("tls %s: the server accepted the connection", check)
	}
	if status.Code(err) != codes.Unavailable {
		return fmt.Errorf("tls %s: %w, want UNAVAILABLE", check, err)
	}
	fmt.Printf("OK tls %s: %v\n", check, rpccode.Code(status.Code(err)))
	return nil
}
