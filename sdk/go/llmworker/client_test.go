package llmworker_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/llmworker/llmworker/sdk/go/internal/testserver"
	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// target is the address of the demo server TestMain starts, and secure that of one serving
// TLS (certificates made by the test, under caFile) to callers with token only. Both are
// llmworker's demo server run by the repository's Python ($LLMWORKER_PYTHON, default the
// .venv make builds).
var target, secure, caFile string

const token = "go-sdk-test-token-0123456789"

func TestMain(m *testing.M) {
	directory, err := os.MkdirTemp("", "llmworker-go-sdk-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(directory)
	plain, err := testserver.Start([]string{"--no-internal"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer plain.Stop()
	target = plain.Address
	tlsArgs, err := secureFiles(directory)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	guarded, err := testserver.Start(append([]string{"--no-internal"}, tlsArgs...))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer guarded.Stop()
	secure = guarded.Address
	code := m.Run()
	plain.Stop()
	guarded.Stop()
	os.RemoveAll(directory)
	os.Exit(code)
}

// secureFiles writes a CA, a certificate for 127.0.0.1 it signs and a caller-token file
// allowing token the echo tool only; the server flags that use them.
func secureFiles(directory string) ([]string, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "go sdk test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serverTemplate := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	serverDER, err := x509.CreateCertificate(rand.Reader, serverTemplate, caTemplate, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	caFile = filepath.Join(directory, "ca.pem")
	files := map[string][]byte{
		caFile:                                 pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		filepath.Join(directory, "server.pem"): pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: serverDER}),
		filepath.Join(directory, "server.key"): pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		filepath.Join(directory, "tokens.json"): []byte(`{"tokens": [{"token": "` + token +
			`", "tools": ["echo"], "label": "go-sdk"}]}`),
	}
	for path, content := range files {
		if err := os.WriteFile(path, content, 0o600); err != nil {
			return nil, err
		}
	}
	return []string{"--tls-cert", filepath.Join(directory, "server.pem"),
		"--tls-key", filepath.Join(directory, "server.key"),
		"--auth-tokens", filepath.Join(directory, "tokens.json")}, nil
}

func dial(t *testing.T) *llmworker.Client {
	t.Helper()
	client, err := llmworker.Dial(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCallToolGivesTextAndStructuredOutput(t *testing.T) {
	client, ctx := dial(t), timeout(t)
	result, err := client.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	if err != nil || result.Output != "hi" {
		t.Fatalf("echo: %v %v", result, err)
	}
	identity, err := client.CallTool(ctx, "whoami", json.RawMessage(`{}`),
		llmworker.WithCallID("go-1"), llmworker.WithMetadata(map[string]string{"user": "ada"}))
	if err != nil {
		t.Fatal(err)
	}
	var who struct {
		CallID   string            `json:"call_id"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(identity.Structured, &who); err != nil || who.CallID != "go-1" || who.Metadata["user"] != "ada" {
		t.Fatalf("whoami: %s %v", identity.Structured, err)
	}
}

func TestEachFailureIsTheTypeOfItsReason(t *testing.T) {
	client, ctx := dial(t), timeout(t)
	_, err := client.CallTool(ctx, "no_such_tool", nil)
	var notFound llmworker.ToolNotFound
	if !errors.As(err, &notFound) || notFound.Code != codes.NotFound || notFound.Metadata["tool"] != "no_such_tool" {
		t.Fatalf("an unknown tool: %#v", err)
	}
	if status.Code(err) != codes.NotFound { // the status stays readable
		t.Fatalf("status.Code: %v", status.Code(err))
	}
	_, err = client.CallTool(ctx, "countdown", map[string]any{"n": 0})
	if !errors.As(err, &llmworker.ToolInvalidArgument{}) {
		t.Fatalf("a bad argument: %#v", err)
	}
	_, err = client.CallTool(ctx, "kv_delete", map[string]any{"key": "k"})
	if !errors.As(err, &llmworker.ApprovalRequired{}) {
		t.Fatalf("a tool that requires approval, called alone: %#v", err)
	}
	_, err = client.SearchTools(ctx, "", 3)
	var invalid llmworker.InvalidRequest
	if !errors.As(err, &invalid) || !strings.Contains(invalid.Message, "query") {
		t.Fatalf("an empty query: %#v", err)
	}
	if len(llmworker.Reasons()) != 26 {
		t.Fatalf("%d reasons, the README's table has 26", len(llmworker.Reasons()))
	}
}

func TestCallToolStreamYieldsProgressChunksThenTheResult(t *testing.T) {
	client, ctx := dial(t), timeout(t)
	var progress int
	var chunks strings.Builder
	var result *llmworker.Result
	for event, err := range client.CallToolStream(ctx, "countdown", map[string]any{"n": 3, "delay": 0.06}) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case event.Progress != nil:
			progress++
		case event.Result != nil:
			result = event.Result
		default:
			chunks.WriteString(event.Chunk)
		}
	}
	if progress == 0 || chunks.String() != "3\n2\n1\n" || result == nil || result.Output != "3\n2\n1\n" {
		t.Fatalf("progress %d, chunks %q, result %v", progress, chunks.String(), result)
	}
	for _, err := range client.CallToolStream(ctx, "no_such_tool", nil) {
		if !errors.As(err, &llmworker.ToolNotFound{}) {
			t.Fatalf("a stream of an unknown tool: %#v", err)
		}
	}
}

func TestABatchPausesForApprovalAndResumes(t *testing.T) {
	client, ctx := dial(t), timeout(t)
	if _, err := client.CallTool(ctx, "kv_set", map[string]any{"key": "go-key", "value": "v"}); err != nil {
		t.Fatal(err)
	}
	outcome, err := client.CallTools(ctx, []llmworker.Call{
		{ID: "read", Name: "kv_get", Input: map[string]any{"key": "go-key"}},
		{ID: "delete", Name: "kv_delete", Input: map[string]any{"key": "go-key"}},
	})
	if err != nil || outcome.Paused == nil {
		t.Fatalf("the batch did not pause: %v %v", outcome, err)
	}
	pending := outcome.Paused.GetPendingCalls() // nothing ran yet
	if len(pending) != 2 || pending[1].GetCallId() != "delete" || !pending[1].GetAwaitingApproval() {
		t.Fatalf("pending: %v", pending)
	}
	token := outcome.Paused.GetResumeToken()
	outcome, err = client.Resume(ctx, token, llmworker.Approve("delete"))
	if err != nil || outcome.Completed == nil {
		t.Fatalf("resume: %v %v", outcome, err)
	}
	if outcome.Completed[0].GetOutput() != "v" || outcome.Completed[1].GetIsError() {
		t.Fatalf("results: %v", outcome.Completed)
	}
	if err := llmworker.ResultError(outcome.Completed[1]); err != nil {
		t.Fatalf("a result that succeeded has the error %v", err)
	}
	_, err = client.Resume(ctx, token, llmworker.Approve("delete"))
	if !errors.As(err, &llmworker.ResumeTokenUnknown{}) {
		t.Fatalf("a token used already: %#v", err)
	}
}

func TestABatchResultsErrorIsTyped(t *testing.T) {
	client, ctx := dial(t), timeout(t)
	outcome, err := client.CallTools(ctx, []llmworker.Call{
		{ID: "missing", Name: "no_such_tool"},
		{ID: "refused", Name: "echo", Input: map[string]any{}},
	})
	if err != nil || len(outcome.Completed) != 2 {
		t.Fatalf("the batch: %v %v", outcome, err)
	}
	var notFound llmworker.ToolNotFound
	if !errors.As(llmworker.ResultError(outcome.Completed[0]), &notFound) || notFound.Metadata["tool"] != "no_such_tool" {
		t.Fatalf("an unknown tool's result: %#v", llmworker.ResultError(outcome.Completed[0]))
	}
	var invalid llmworker.ToolInvalidArgument
	if !errors.As(llmworker.ResultError(outcome.Completed[1]), &invalid) || invalid.Code != codes.InvalidArgument {
		t.Fatalf("a refused input's result: %#v", llmworker.ResultError(outcome.Completed[1]))
	}
}

func TestPausedBatchesAreListedAndDecidedByTheirID(t *testing.T) {
	client, ctx := dial(t), timeout(t)
	definition, err := client.GetTool(ctx, "kv_delete")
	if err != nil || !definition.GetRequiresApproval() {
		t.Fatalf("GetTool kv_delete: %v %v", definition, err)
	}
	if _, err := client.GetTool(ctx, "no_such_tool"); !errors.As(err, &llmworker.ToolNotFound{}) {
		t.Fatalf("GetTool of an unknown tool: %#v", err)
	}
	var batchIDs []string
	for _, key := range []string{"first", "second"} {
		outcome, err := client.CallTools(ctx, []llmworker.Call{{ID: "d", Name: "kv_delete", Input: map[string]any{"key": key}}})
		if err != nil || outcome.Paused == nil {
			t.Fatalf("the batch did not pause: %v %v", outcome, err)
		}
		batchIDs = append(batchIDs, outcome.Paused.GetBatchId())
	}
	var listed []string
	for batch, err := range client.PausedBatches(ctx, 1) { // one per page: the pages are followed
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, batch.GetBatchId())
	}
	for _, id := range batchIDs {
		if !slices.Contains(listed, id) {
			t.Fatalf("PausedBatches gave %v, not %s", listed, id)
		}
	}
	outcome, err := client.Decide(ctx, batchIDs[0], llmworker.Deny("d", "not now"))
	if err != nil || len(outcome.Completed) != 1 {
		t.Fatalf("Decide: %v %v", outcome, err)
	}
	if !errors.As(llmworker.ResultError(outcome.Completed[0]), &llmworker.CallDenied{}) {
		t.Fatalf("a denied call's result: %v", outcome.Completed[0])
	}
	if _, err := client.Decide(ctx, batchIDs[0]); !errors.As(err, &llmworker.ResumeTokenUnknown{}) {
		t.Fatalf("a batch decided already: %#v", err)
	}
}

func TestBalancingSpreadsCallsOverAnAddressListAndOutlivesAReplica(t *testing.T) {
	other, err := testserver.Start([]string{"--no-internal"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	client, err := llmworker.Dial("ipv4:"+target+","+other.Address, llmworker.WithBalancing(), llmworker.WithRetries())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := timeout(t)
	served := map[string]int{}
	for range 20 {
		var answered peer.Peer
		_, err := client.Service().CallTool(ctx, &pb.CallToolRequest{Name: "whoami", InputJson: "{}"}, grpc.Peer(&answered))
		if err != nil {
			t.Fatal(err)
		}
		served[answered.Addr.String()]++
	}
	if served[target] == 0 || served[other.Address] == 0 {
		t.Fatalf("round robin over both replicas: %v", served)
	}
	other.Stop() // it drains (NOT_SERVING), then goes: the calls go to the other one
	for i := range 20 {
		if _, err := client.CallTool(ctx, "whoami", nil); err != nil {
			t.Fatalf("call %d after a replica left: %v", i, err)
		}
	}
}

func TestListingsSearchAndWatch(t *testing.T) {
	client, ctx := dial(t), timeout(t)
	definitions, err := client.ListDefinitions(ctx)
	if err != nil || len(definitions.Fingerprint) != 64 {
		t.Fatalf("listing: %v %v", definitions, err)
	}
	names := make([]string, len(definitions.Tools))
	for i, tool := range definitions.Tools {
		names[i] = tool.GetName()
	}
	if !slices.IsSorted(names) || !slices.Contains(names, "echo") {
		t.Fatalf("names %v", names)
	}
	anthropic, err := client.ListDefinitionsIn(ctx, pb.DefinitionFormat_DEFINITION_FORMAT_ANTHROPIC)
	var entries []struct {
		Name string `json:"name"`
	}
	if err != nil || json.Unmarshal(anthropic, &entries) != nil || len(entries) != len(names) {
		t.Fatalf("anthropic: %s %v", anthropic, err)
	}
	found, err := client.SearchTools(ctx, "delete a key", 3)
	if err != nil || len(found) == 0 || found[0].Tool.GetName() != "kv_delete" || found[0].Score <= 0 {
		t.Fatalf("search: %v %v", found, err)
	}
	for watched, err := range client.WatchDefinitions(ctx) {
		if err != nil || watched.Fingerprint != definitions.Fingerprint {
			t.Fatalf("watch: %v %v", watched, err)
		}
		break // the first is the set now; stopping the loop ends the watch
	}
}

func TestTLSAndTokens(t *testing.T) {
	ctx := timeout(t)
	client, err := llmworker.Dial(secure, llmworker.WithRootCA(caFile), llmworker.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if result, err := client.CallTool(ctx, "echo", map[string]any{"text": "tls"}); err != nil || result.Output != "tls" {
		t.Fatalf("echo over TLS with a token: %v %v", result, err)
	}
	_, err = client.CallTool(ctx, "calculate", map[string]any{"expression": "1"})
	if !errors.As(err, &llmworker.ToolForbidden{}) {
		t.Fatalf("a tool outside the token's scope: %#v", err)
	}
	for event, err := range client.CallToolStream(ctx, "echo", map[string]any{"text": "s"}) {
		if err != nil || (event.Result != nil && event.Result.Output != "s") {
			t.Fatalf("a stream with the token: %v %v", event, err)
		}
	}
	anonymous, err := llmworker.Dial(secure, llmworker.WithRootCA(caFile))
	if err != nil {
		t.Fatal(err)
	}
	defer anonymous.Close()
	if _, err = anonymous.CallTool(ctx, "echo", map[string]any{"text": "x"}); !errors.As(err, &llmworker.Unauthenticated{}) {
		t.Fatalf("no token: %#v", err)
	}
	plaintext, err := llmworker.Dial(secure, llmworker.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	defer plaintext.Close()
	_, err = plaintext.CallTool(ctx, "echo", map[string]any{"text": "x"})
	var failure *llmworker.Failure
	if !errors.As(err, &failure) || failure.Reason != "" || failure.Code != codes.Unavailable {
		t.Fatalf("plaintext to a TLS server: %#v", err)
	}
	if _, err := llmworker.Dial(secure, llmworker.WithToken("two\nlines")); err == nil {
		t.Fatal("a token with a line break was taken")
	}
	if _, err := llmworker.Dial(secure, llmworker.WithRootCA("/nonexistent.pem")); err == nil {
		t.Fatal("a missing CA file was taken")
	}
}
