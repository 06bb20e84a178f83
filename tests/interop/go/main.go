// Command interop exercises the llmworker gRPC contract from Go.
//
//	interop client   -target HOST:PORT -fingerprint HEX
//	interop provider -registry unix:///path.sock -token TOKEN
//	interop agent    -target HOST:PORT
//	interop formats  -target HOST:PORT -expect DIR
//	interop stream   -target HOST:PORT
//	interop watch    -target HOST:PORT -registry unix:///path.sock -token TOKEN
//	interop tls      -target HOST:PORT -ca FILE [-cert FILE -key FILE] [-expect ok|refused|plaintext-refused]
//	interop auth     -target HOST:PORT -token TOKEN -tools a,b,c -forbidden TOOL
//
// The client checks listing, fingerprints, calls, error statuses and deadlines and prints one
// "OK <check>" line per check; any mismatch prints "FAIL <check>: <why>" and exits 1. The
// provider serves the Go tools "go_reverse" and "go_whoami", registers them with a server's
// internal ToolRegistry, prints "READY <port>" and serves until SIGTERM. The agent checks the
// agent contract on the demo tools (call ids, metadata, approval, CallTools, ResumeBatch).
// The stream checks CallToolStream on the demo tools (events in order, the result last,
// CallTool's errors, cancellation reaching the tool). The watch checks WatchDefinitions: the
// first message (the current state, unchanged for a known fingerprint, in OpenAI Chat format),
// a tool it registers with the internal ToolRegistry reaching every watch, the same tool
// unregistered leaving every watch, and cancellation.
// The tls checks a server with TLS on, verifying its certificate against -ca and presenting
// -cert/-key when given: ok, listing and calling echo; refused, the handshake failing
// (UNAVAILABLE) for a server that requires a client certificate from its CA; plaintext-refused,
// a plaintext connection failing (UNAVAILABLE). Bad tls flags exit 2.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: interop client|provider|agent|formats|stream|watch|tls|auth [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "client":
		flags := flag.NewFlagSet("client", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of the server")
		fingerprint := flags.String("fingerprint", "", "the fingerprint Python computed")
		_ = flags.Parse(os.Args[2:])
		err = runClient(*target, *fingerprint)
	case "provider":
		flags := flag.NewFlagSet("provider", flag.ExitOnError)
		registry := flags.String("registry", "", "internal ToolRegistry target of the server")
		token := flags.String("token", "", "the server's registry token")
		_ = flags.Parse(os.Args[2:])
		err = runProvider(*registry, *token)
	case "agent":
		flags := flag.NewFlagSet("agent", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of the server")
		_ = flags.Parse(os.Args[2:])
		err = runAgent(*target)
	case "formats":
		flags := flag.NewFlagSet("formats", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of the server")
		expect := flags.String("expect", "", "directory of the definitions Python produced")
		_ = flags.Parse(os.Args[2:])
		err = runFormats(*target, *expect)
	case "stream":
		flags := flag.NewFlagSet("stream", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of the server")
		_ = flags.Parse(os.Args[2:])
		err = runStream(*target)
	case "watch":
		flags := flag.NewFlagSet("watch", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of the server")
		registry := flags.String("registry", "", "internal ToolRegistry target of the server")
		token := flags.String("token", "", "the server's registry token")
		_ = flags.Parse(os.Args[2:])
		err = runWatch(*target, *registry, *token)
	case "tls":
		flags := flag.NewFlagSet("tls", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of the server, with TLS on")
		ca := flags.String("ca", "", "PEM file of the CA that signed the server's certificate")
		cert := flags.String("cert", "", "PEM file of the client certificate, for mTLS")
		key := flags.String("key", "", "PEM file of the client certificate's key")
		expect := flags.String("expect", "ok", "ok, refused (the handshake fails) or plaintext-refused")
		_ = flags.Parse(os.Args[2:])
		transport, usage := tlsCredentials(*target, *ca, *cert, *key, *expect)
		if usage != nil {
			fmt.Fprintln(os.Stderr, "usage: interop tls:", usage)
			os.Exit(2)
		}
		err = runTLS(*target, transport, *expect)
	case "auth":
		flags := flag.NewFlagSet("auth", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of the server, with --auth-tokens")
		token := flags.String("token", "", "a caller token of the server's --auth-tokens file")
		tools := flags.String("tools", "", "comma-separated names of every tool the token may call, echo among them")
		forbidden := flags.String("forbidden", "", "a tool the token may not call")
		_ = flags.Parse(os.Args[2:])
		scope, usage := authScope(*token, *tools, *forbidden)
		if usage != nil {
			fmt.Fprintln(os.Stderr, "usage: interop auth:", usage)
			os.Exit(2)
		}
		err = runAuth(*target, *token, scope, *forbidden)
	default:
		err = fmt.Errorf("unknown command %q: use client, provider, agent, formats, stream, watch, tls or auth", os.Args[1])
	}
	if err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}
