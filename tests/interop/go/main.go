// Command interop exercises the llmworker gRPC contract from Go, through the Go SDK
// (sdk/go): its client (llmworker.Dial, typed errors, calls, streams, batches, watches,
// TLS, tokens, balancing), its provider package, and its generated stubs (llmworkerv1) for
// what a check sends raw on purpose or the SDK does not wrap (the internal ToolRegistry).
//
//	interop client    -target HOST:PORT -fingerprint HEX
//	interop provider  -registry TARGET[,TARGET...] -token TOKEN [-port N] [-renew DURATION] [-no-health]
//	interop agent     -target HOST:PORT
//	interop formats   -target HOST:PORT -expect DIR
//	interop stream    -target HOST:PORT
//	interop watch     -target HOST:PORT -registry unix:///path.sock -token TOKEN
//	interop tls       -target HOST:PORT -ca FILE [-cert FILE -key FILE] [-expect ok|refused|plaintext-refused]
//	interop auth      -target HOST:PORT -token TOKEN -tools a,b,c -forbidden TOOL
//	interop balance   -target ipv4:HOST:P1,HOST:P2,... [-seconds 4] [-concurrency 8]
//	interop burst     -target HOST:PORT [-slow 4] [-burst 300]
//	interop identity  -registry TARGET -alpha TOKEN -bravo TOKEN
//	interop approvals -target HOST:PORT -owner TOKEN -other TOKEN -approver TOKEN
//	interop numbers   -target HOST:PORT
//	interop durable   -a HOST:PORT -b HOST:PORT
//	interop reasons   -target HOST:PORT -registry TARGET -token TOKEN
//
// The client checks listing, fingerprints, calls, error statuses and deadlines and prints one
// "OK <check>" line per check; any mismatch prints "FAIL <check>: <why>" and exits 1. The
// provider serves the Go tools "go_reverse" and "go_whoami" (the SDK's provider, with gRPC
// health unless -no-health), registers them with a server's internal ToolRegistry (each of a
// comma-separated list; any failure ends it), prints "READY <port>" and serves until
// SIGTERM, when it unregisters them; the SDK renews every registration (every 4 s). With
// -renew it retries every target that failed, prints "READY <port>" once all accepted, and
// the SDK renews at that interval (-port keeps its address, so a restarted provider's
// registration is a renewal). The agent checks the
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
// The balance calls whoami and echo over every replica -target names with gRPC's round_robin,
// client-side health checking and, for whoami only (read-only, idempotent), retries on
// UNAVAILABLE (the service configs of llmworker._client.balancing), for -seconds from -concurrency
// goroutines, and prints one JSON line: per tool, retrying, calls, ok, failed by status code.
// The burst holds -slow countdowns on one connection, then fires -burst echo calls at once on
// it: every answer must be OK or RESOURCE_EXHAUSTED / CONCURRENCY_LIMIT (admission), none gRPC's
// own stream refusal (a bare UNAVAILABLE); it prints the answers counted, then the OK line.
// The identity checks the provider identities of a server's internal ToolRegistry
// (--provider-tokens), serving the Go tools with GetTool on 127.0.0.1: alpha's token may
// register "go_*" at "127.0.0.1:*" and may not lock, bravo's anything anywhere. The owner
// registers and unregisters; another identity can neither take a tool over nor unregister it,
// and a tool or a target outside the globs (before anything dials it), a definition other than
// the served one, LockRegistry without may_lock and no token are refused.
// The approvals checks caller-bound approvals on the demo tools with --auth-tokens: a batch
// the owner's token paused cannot be resumed by the other token (RESUME_FORBIDDEN), which
// consumes nothing, so the owner resumes it; the approver's token ("approves" globs) resumes
// another of the owner's batches.
// The numbers checks number literals JSON does not have in a call's input_json, on the demo
// tools: countdown with NaN, Infinity, -Infinity, 1e400 or -1e400 as its delay is refused
// INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT naming $.delay by CallTool and CallToolStream, and
// inside a CallTools batch only that call (its echo completes); then the server still serves.
// The durable checks paused batches in a store two server processes share (the same --state,
// the demo tools, no --auth-tokens): a kv_delete batch paused on -a is listed by -b's
// ListPausedBatches (paged one batch at a time) and resumed there with its token, which -a
// then refuses (RESUME_TOKEN_UNKNOWN); another is denied on -b by its batch_id, and neither
// is listed afterwards.
// The reasons provokes, as the SDK's typed errors, the reasons no other check reaches, on a
// server with the demo tools, an internal registry (-token), --tool-timeout countdown=0.3 and
// --max-paused-batches 1: DUPLICATE_NAME, TOOL_TIMEOUT, PAUSED_BATCHES_FULL,
// DEFINITION_FORMAT_UNSUPPORTED (a Go tool taking a map), PROVIDER_UNAVAILABLE (a Go provider that stopped) and REGISTRY_LOCKED (it locks the
// registry last).
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: interop client|provider|agent|formats|stream|watch|tls|auth|balance|burst|identity|approvals|numbers|durable|search|imported|reasons [flags]")
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
		registry := flags.String("registry", "", "internal ToolRegistry target of the server, or a comma-separated list of them (one per replica)")
		token := flags.String("token", "", "the server's registry token")
		port := flags.Int("port", 0, "the port to serve the tools on (0: any; a fixed one keeps the provider's address across restarts)")
		renew := flags.Duration("renew", 0, "retry failed registrations and renew them all this often, e.g. 500ms (0: register once, any failure ends it)")
		noHealth := flags.Bool("no-health", false, "serve the tools without grpc.health.v1 (the server then checks the provider with GetTool)")
		_ = flags.Parse(os.Args[2:])
		err = runProvider(*registry, *token, *port, *renew, *noHealth)
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
	case "balance":
		flags := flag.NewFlagSet("balance", flag.ExitOnError)
		target := flags.String("target", "", "every replica, e.g. ipv4:127.0.0.1:P1,127.0.0.1:P2 or dns:///host:port")
		seconds := flags.Float64("seconds", 4, "how long to keep calling")
		concurrency := flags.Int("concurrency", 8, "goroutines calling at once")
		_ = flags.Parse(os.Args[2:])
		err = runBalance(*target, *seconds, *concurrency)
	case "burst":
		flags := flag.NewFlagSet("burst", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of the server")
		slow := flags.Int("slow", 4, "slow countdowns to hold in flight, e.g. the server's --max-concurrent-calls")
		burst := flags.Int("burst", 300, "echo calls to fire at once on the same connection")
		_ = flags.Parse(os.Args[2:])
		err = runBurst(*target, *slow, *burst)
	case "identity":
		flags := flag.NewFlagSet("identity", flag.ExitOnError)
		registry := flags.String("registry", "", "internal ToolRegistry target of a server with --provider-tokens")
		alpha := flags.String("alpha", "", `token of the identity with tools ["go_*"] and targets ["127.0.0.1:*"], without may_lock`)
		bravo := flags.String("bravo", "", `token of another identity, with tools ["*"] and targets ["*"]`)
		_ = flags.Parse(os.Args[2:])
		if *registry == "" || *alpha == "" || *bravo == "" {
			fmt.Fprintln(os.Stderr, "usage: interop identity: -registry, -alpha and -bravo are required")
			os.Exit(2)
		}
		err = runIdentity(*registry, *alpha, *bravo)
	case "approvals":
		flags := flag.NewFlagSet("approvals", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of a server with the demo tools and --auth-tokens")
		owner := flags.String("owner", "", "caller token that pauses the batches")
		other := flags.String("other", "", "caller token of another label, without approves")
		approver := flags.String("approver", "", `caller token of a third label whose "approves" globs match echo and kv_delete, e.g. ["*"]`)
		_ = flags.Parse(os.Args[2:])
		if *owner == "" || *other == "" || *approver == "" {
			fmt.Fprintln(os.Stderr, "usage: interop approvals: -owner, -other and -approver are required")
			os.Exit(2)
		}
		err = runApprovals(*target, *owner, *other, *approver)
	case "numbers":
		flags := flag.NewFlagSet("numbers", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of a server with the demo tools")
		_ = flags.Parse(os.Args[2:])
		err = runNumbers(*target)
	case "durable":
		flags := flag.NewFlagSet("durable", flag.ExitOnError)
		a := flags.String("a", "", "public address of a server with the demo tools and a shared --state")
		b := flags.String("b", "", "public address of another server process with the demo tools and the same --state")
		_ = flags.Parse(os.Args[2:])
		if *a == "" || *b == "" {
			fmt.Fprintln(os.Stderr, "usage: interop durable: -a and -b are required")
			os.Exit(2)
		}
		err = runDurable(*a, *b)
	case "search":
		flags := flag.NewFlagSet("search", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of a server with the demo tools")
		_ = flags.Parse(os.Args[2:])
		err = runSearch(*target)
	case "reasons":
		flags := flag.NewFlagSet("reasons", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of a server with the demo tools, --tool-timeout countdown=0.3 and --max-paused-batches 1")
		registry := flags.String("registry", "", "internal ToolRegistry target of the server")
		token := flags.String("token", "", "the server's registry token")
		_ = flags.Parse(os.Args[2:])
		if *registry == "" || *token == "" {
			fmt.Fprintln(os.Stderr, "usage: interop reasons: -registry and -token are required")
			os.Exit(2)
		}
		err = runReasons(*target, *registry, *token)
	case "imported":
		flags := flag.NewFlagSet("imported", flag.ExitOnError)
		target := flags.String("target", "127.0.0.1:50051", "public address of a server importing tests/mcp_import's fixture MCP server as sdk")
		_ = flags.Parse(os.Args[2:])
		err = runImported(*target)
	default:
		err = fmt.Errorf("unknown command %q: use client, provider, agent, formats, stream, watch, tls, auth, balance, burst, identity, approvals, numbers, durable, search, imported or reasons", os.Args[1])
	}
	if err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}
