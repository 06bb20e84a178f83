package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmworker/llmworker/sdk/go/internal/testserver"
	"github.com/llmworker/llmworker/sdk/go/llmworker"
	"github.com/llmworker/llmworker/sdk/go/provider"
)

const token = "go-provider-test-token-0123456789"

// server is a demo server whose registry takes providers at registry (a Unix socket).
var server, registry string

func TestMain(m *testing.M) {
	directory, err := os.MkdirTemp("", "llmworker-go-provider-")
	if err != nil {
		panic(err)
	}
	socket := filepath.Join(directory, "registry.sock")
	started, err := testserver.Start([]string{"--internal-socket", socket}, "LLMWORKER_TOKEN="+token)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server, registry = started.Address, "unix://"+socket
	code := m.Run()
	started.Stop()
	os.RemoveAll(directory)
	os.Exit(code)
}

type Repeat struct {
	Text  string `json:"text" jsonschema:"description=what to repeat"`
	Times int    `json:"times" jsonschema:"minimum=1,maximum=5"`
}

type Repeated struct {
	Text   string `json:"text"`
	Length int    `json:"length"`
}

func tools() []provider.Definition {
	repeat := provider.Tool("go_repeat", "Repeat a text (implemented in Go)",
		func(ctx context.Context, in Repeat) (Repeated, error) {
			if in.Times < 1 || in.Times > 5 {
				return Repeated{}, provider.InvalidArgument("times must be 1-5")
			}
			text := ""
			for i := range in.Times {
				text += in.Text
				total := float64(in.Times)
				provider.ReportProgress(ctx, float64(i+1), &total, "")
			}
			return Repeated{text, len(text)}, nil
		}, provider.ReadOnly(), provider.Title("Repeat"))
	whoami := provider.Tool("go_call", "The call id and metadata the tool was given",
		func(ctx context.Context, _ struct{}) (string, error) {
			call := provider.CallOf(ctx)
			return fmt.Sprintf("%s %v", call.ID, call.Metadata), nil
		})
	failing := provider.Tool("go_fail", "Fails", func(context.Context, struct{}) (string, error) {
		return "", errors.New("the disk is full")
	}, provider.RequiresApproval())
	return []provider.Definition{repeat, whoami, failing}
}

func TestAProviderServesRegistersAndLeaves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := provider.New(tools()...)
	if err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = tools.Serve(listener) }()
	for tools.Address() == "" {
		time.Sleep(10 * time.Millisecond)
	}
	if err := tools.Register(ctx, registry, provider.WithToken(token)); err != nil {
		t.Fatal(err)
	}
	client, err := llmworker.Dial(server)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	definitions, err := client.ListDefinitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var repeat, fail bool
	for _, tool := range definitions.Tools {
		switch tool.GetName() {
		case "go_repeat":
			repeat = tool.GetTitle() == "Repeat" && tool.GetAnnotations().GetReadOnlyHint() && tool.GetOutputSchemaJson() != ""
		case "go_fail":
			fail = tool.GetRequiresApproval()
		}
	}
	if !repeat || !fail {
		t.Fatalf("definitions as registered: %v", definitions.Tools)
	}

	result, err := client.CallTool(ctx, "go_repeat", map[string]any{"text": "ab", "times": 3})
	var repeated Repeated
	if err != nil || json.Unmarshal(result.Structured, &repeated) != nil || repeated != (Repeated{"ababab", 6}) {
		t.Fatalf("go_repeat: %v %v", result, err)
	}
	progress := 0
	for event, err := range client.CallToolStream(ctx, "go_repeat", map[string]any{"text": "x", "times": 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if event.Progress != nil {
			progress++
		}
	}
	if progress == 0 {
		t.Fatal("no progress came through the server")
	}
	_, err = client.CallTool(ctx, "go_repeat", map[string]any{"text": "x", "times": 9})
	var invalid llmworker.ToolInvalidArgument
	if !errors.As(err, &invalid) || invalid.Metadata["tool_error"] != "times must be 1-5" {
		t.Fatalf("a refused argument: %#v", err)
	}
	for _, refused := range []struct {
		input any
		says  string
	}{
		{map[string]any{"text": "x", "times": 1, "extra": true}, "extra: unknown field; remove it"},
		{map[string]any{"times": 1}, "text: Field required"},
		{map[string]any{"text": "x", "times": "2"}, "times: Input should be a valid integer (got a string)"},
		{[]int{1}, "arguments must be a JSON object, got an array"},
	} {
		_, err = client.CallTool(ctx, "go_repeat", refused.input)
		if !errors.As(err, &invalid) || invalid.Metadata["tool_error"] != refused.says {
			t.Fatalf("go_repeat %v: %#v, want TOOL_INVALID_ARGUMENT %q", refused.input, err, refused.says)
		}
	}
	who, err := client.CallTool(ctx, "go_call", nil, llmworker.WithCallID("c-7"),
		llmworker.WithMetadata(map[string]string{"user": "ada"}))
	if err != nil || who.Output != "c-7 map[user:ada]" {
		t.Fatalf("go_call: %v %v", who, err)
	}
	outcome, err := client.CallTools(ctx, []llmworker.Call{{ID: "f", Name: "go_fail"}})
	if err != nil || outcome.Paused == nil {
		t.Fatalf("a tool that requires approval did not pause: %v %v", outcome, err)
	}
	outcome, err = client.Resume(ctx, outcome.Paused.GetResumeToken(), llmworker.Approve("f"))
	if err != nil || len(outcome.Completed) != 1 || !outcome.Completed[0].GetIsError() ||
		outcome.Completed[0].GetError().GetMessage() == "" {
		t.Fatalf("go_fail once approved: %v %v", outcome, err)
	}

	tools.Stop(ctx)
	definitions, err = client.ListDefinitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(definitions.Tools))
	for i, tool := range definitions.Tools {
		names[i] = tool.GetName()
	}
	if slices.Contains(names, "go_repeat") {
		t.Fatalf("the tools stayed after Stop: %v", names)
	}
}

func TestBadDefinitionsAndRegistrations(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := provider.New(provider.Tool("bad name", "", func(context.Context, struct{}) (string, error) {
		return "", nil
	})); err == nil {
		t.Fatal("a name with a space was taken")
	}
	if _, err := provider.New(provider.Tool("numbers", "", func(context.Context, struct{}) ([]int, error) {
		return nil, nil
	})); err == nil {
		t.Fatal("a structured result that is no JSON object was taken")
	}
	twice := tools()[0]
	if _, err := provider.New(twice, twice); err == nil {
		t.Fatal("one name twice was taken")
	}
	tools, err := provider.New(provider.Tool("echo", "Collides with the demo's echo",
		func(context.Context, struct{}) (string, error) { return "", nil }))
	if err != nil {
		t.Fatal(err)
	}
	if err := tools.Register(ctx, registry, provider.WithToken(token)); err == nil {
		t.Fatal("registered before serving")
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = tools.Serve(listener) }()
	defer tools.Stop(ctx)
	for tools.Address() == "" {
		time.Sleep(10 * time.Millisecond)
	}
	err = tools.Register(ctx, registry, provider.WithToken(token))
	if !errors.As(err, &llmworker.DuplicateName{}) {
		t.Fatalf("a name the server has: %#v", err)
	}
	if err := tools.Register(ctx, registry, provider.WithToken(token), provider.WithRenewEvery(0)); err == nil {
		t.Fatal("a renewal every 0 s was taken")
	}
	err = tools.Register(ctx, registry, provider.WithToken("wrong-token-0123456789"))
	if !errors.As(err, &llmworker.Unauthenticated{}) {
		t.Fatalf("a wrong token: %#v", err)
	}
}
