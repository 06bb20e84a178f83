package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"

	rpccode "google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "llmworker/interop/gen/llmworker/v1"
)

// tlsCredentials are what interop tls dials with: plaintext for -expect plaintext-refused
// (-ca is not read), else TLS verifying the server's certificate against the -ca PEM for the
// target's host (an IP SAN for 127.0.0.1) and presenting -cert/-key when they are given. Its
// errors are usage errors.
func tlsCredentials(target, ca, cert, key, expect string) (credentials.TransportCredentials, error) {
	switch expect {
	case "plaintext-refused":
		return insecure.NewCredentials(), nil
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
	authorities, err := os.ReadFile(ca)
	if err != nil {
		return nil, fmt.Errorf("-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(authorities) {
		return nil, fmt.Errorf("-ca %s: no PEM certificate in it", ca)
	}
	config := &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("-cert/-key: %w", err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(config), nil
}

// runTLS checks a server with TLS on. ok: ListDefinitionsSorted lists echo and CallTool echo
// answers, over the TLS connection. refused (a client certificate missing or from another
// CA, for a server requiring one) and plaintext-refused: the handshake fails, so
// ListDefinitionsSorted fails UNAVAILABLE, though the target accepts TCP connections.
func runTLS(target string, transport credentials.TransportCredentials, expect string) error {
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(transport),
		grpc.WithUnaryInterceptor(withTimeout))
	if err != nil {
		return fmt.Errorf("tls connect: %w", err)
	}
	defer conn.Close()
	client := pb.NewToolServiceClient(conn)
	switch expect {
	case "refused":
		return tlsRefused(client, target, "refused")
	case "plaintext-refused":
		return tlsRefused(client, target, "plaintext refused")
	}
	listed, err := client.ListDefinitionsSorted(context.Background(), &pb.ListDefinitionsSortedRequest{})
	if err != nil {
		return fmt.Errorf("tls listing: %w", err)
	}
	names := make([]string, 0, len(listed.Definitions))
	for _, definition := range listed.Definitions {
		names = append(names, definition.Name)
	}
	if !slices.Contains(names, "echo") {
		return fmt.Errorf("tls listing: names %v, want echo among them", names)
	}
	fmt.Println("OK tls listing")
	reply, err := client.CallTool(context.Background(), call("", "echo", `{"text":"over tls"}`))
	if err != nil || reply.Output != "over tls" {
		return fmt.Errorf("tls call echo: output %q err %v, want \"over tls\"", reply.GetOutput(), err)
	}
	fmt.Println("OK tls call echo")
	return nil
}

// tlsRefused: ListDefinitionsSorted fails UNAVAILABLE. A target that refuses TCP would fail so
// too, so the target must first accept a TCP connection: the refusal is the handshake's.
func tlsRefused(client pb.ToolServiceClient, target, check string) error {
	probe, err := net.DialTimeout("tcp", target, rpcTimeout)
	if err != nil {
		return fmt.Errorf("tls %s: nothing accepts connections on %s: %w", check, target, err)
	}
	probe.Close()
	_, err = client.ListDefinitionsSorted(context.Background(), &pb.ListDefinitionsSortedRequest{})
	if err == nil {
		return fmt.Errorf("tls %s: the server accepted the connection", check)
	}
	if status.Code(err) != codes.Unavailable {
		return fmt.Errorf("tls %s: %w, want UNAVAILABLE", check, err)
	}
	fmt.Printf("OK tls %s: %v\n", check, rpccode.Code(status.Code(err)))
	return nil
}
