package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
)

// runImported calls tools a server imported from an MCP server (tests/mcp_import's fixture,
// prefixed "sdk"): a structured result, progress on CallToolStream, and an MCP isError
// result as UNKNOWN / TOOL_EXECUTION_FAILED with the MCP server's text.
func runImported(target string) error {
	client, err := llmworker.Dial(target, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("imported connect: %w", err)
	}
	defer client.Close()
	checks := []struct {
		ok  string
		run func() error
	}{
		{"a structured result", func() error {
			reply, err := client.CallTool(context.Background(), "sdk__weather", map[string]string{"city": "Oslo"})
			if err != nil {
				return err
			}
			var weather struct {
				City    string  `json:"city"`
				Celsius float64 `json:"celsius"`
			}
			if err := json.Unmarshal(reply.Structured, &weather); err != nil {
				return fmt.Errorf("structured output %q: %w", reply.Structured, err)
			}
			if weather.City != "Oslo" || weather.Celsius != 21.5 {
				return fmt.Errorf("structured output %q", reply.Structured)
			}
			return nil
		}},
		{"progress then the result on CallToolStream", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			progress, result := 0, ""
			for event, err := range client.CallToolStream(ctx, "sdk__slow", json.RawMessage(`{"steps": 3, "delay": 0.05}`)) {
				if err != nil {
					return err
				}
				if event.Progress != nil {
					progress++
				}
				if event.Result != nil {
					result = event.Result.Output
				}
			}
			if progress == 0 || result != "done after 3 steps" {
				return fmt.Errorf("%d progress events, result %q", progress, result)
			}
			return nil
		}},
		{"an MCP error result is TOOL_EXECUTION_FAILED", func() error {
			_, err := client.CallTool(context.Background(), "sdk__fail", map[string]string{"reason": "disk full"})
			failed, err := failure(err, codes.Unknown, "TOOL_EXECUTION_FAILED")
			if err != nil {
				return err
			}
			if message := failed.Message; !strings.Contains(message, "disk full") {
				return fmt.Errorf("message %q does not carry the MCP server's text", message)
			}
			return nil
		}},
	}
	for _, check := range checks {
		if err := check.run(); err != nil {
			return fmt.Errorf("imported %s: %w", check.ok, err)
		}
		fmt.Println("OK imported", check.ok)
	}
	return nil
}
