package llmworker_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
)

// Call a tool, and tell a failure by its reason.
func ExampleClient_CallTool() {
	client, err := llmworker.Dial(target) // e.g. "127.0.0.1:50051"
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()
	result, err := client.CallTool(ctx, "calculate", map[string]any{"expression": "6 * 7"})
	fmt.Println(result.Output, err)
	_, err = client.CallTool(ctx, "weather", map[string]any{"city": "Oslo"})
	var notFound llmworker.ToolNotFound
	fmt.Println(errors.As(err, &notFound), notFound.Metadata["tool"])
	// Output:
	// 42 <nil>
	// true weather
}

// Stream a call's progress and output.
func ExampleClient_CallToolStream() {
	client, err := llmworker.Dial(target)
	if err != nil {
		panic(err)
	}
	defer client.Close()
	input := map[string]any{"n": 2, "delay": 0.05}
	for event, err := range client.CallToolStream(context.Background(), "countdown", input) {
		switch {
		case err != nil:
			fmt.Println("failed:", err)
		case event.Result != nil:
			fmt.Printf("result %q\n", event.Result.Output)
		case event.Chunk != "":
			fmt.Printf("chunk %q\n", event.Chunk)
		}
	}
	// Output:
	// chunk "2\n"
	// chunk "1\n"
	// result "2\n1\n"
}
