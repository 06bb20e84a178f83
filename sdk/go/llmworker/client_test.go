package llmworker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// target is the address of the server TestMain starts: llmworker's demo server, run by the
// repository's Python ($LLMWORKER_PYTHON, default the .venv make builds).
var target string

func TestMain(m *testing.M) {
	python := os.Getenv("LLMWORKER_PYTHON")
	if python == "" {
		python, _ = filepath.Abs("../../../.venv/bin/python")
	}
	server := exec.Command(python, "-m", "llmworker_server", "--demo", "--no-internal", "--port", "0",
		"--state", "memory")
	server.Dir = "../../.."
	log, err := server.StderrPipe()
	if err == nil {
		err = server.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the llmworker server (run make first):", err)
		os.Exit(1)
	}
	lines := bufio.NewScanner(log)
	for lines.Scan() {
		if _, address, found := strings.Cut(lines.Text(), " tools on "); found {
			target, _, _ = strings.Cut(address, " ")
			break
		}
	}
	go func() {
		for lines.Scan() { // keep draining the log: a full pipe would block the server
		}
	}()
	code := 1
	if target != "" {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, "the llmworker server did not say where it serves")
	}
	_ = server.Process.Signal(os.Interrupt)
	_ = server.Wait()
	os.Exit(code)
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
	_, err = client.Resume(ctx, token, llmworker.Approve("delete"))
	if !errors.As(err, &llmworker.ResumeTokenUnknown{}) {
		t.Fatalf("a token used already: %#v", err)
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
