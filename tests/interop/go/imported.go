package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "llmworker/interop/gen/llmworker/v1"
)

// runImported calls tools a server imported from an MCP server (tests/mcp_import's fixture,
// prefixed "sdk"): a structured result, progress on CallToolStream, and an MCP isError
// result as UNKNOWN / TOOL_EXECUTION_FAILED with the MCP server's text.
func runImported(target string) error {
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(withTimeout))
	if err != nil {
		return fmt.Errorf("imported connect: %w", err)
	}
	defer conn.Close()
	client := pb.NewToolServiceClient(conn)
	checks := []struct {
		ok  string
		run func() error
	}{
		{"a structured result", func() error {
			reply, err := client.CallTool(context.Background(), call("", "sdk__weather", `{"city": "Oslo"}`))
			if err != nil {
				return err
			}
			var weather struct {
				City    string  `json:"city"`
				Celsius float64 `json:"celsius"`
			}
			if err := json.Unmarshal([]byte(reply.StructuredOutputJson), &weather); err != nil {
				return fmt.Errorf("structured output %q: %w", reply.StructuredOutputJson, err)
			}
			if weather.City != "Oslo" || weather.Celsius != 21.5 {
				return fmt.Errorf("structured output %q", reply.StructuredOutputJson)
			}
			return nil
		}},
		{"progress then the result on CallToolStream", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			stream, err := client.CallToolStream(ctx, call("", "sdk__slow", `{"steps": 3, "delay": 0.05}`))
			if err != nil {
				return err
			}
			progress, result := 0, ""
			for {
				event, err := stream.Recv()
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
				if event.GetProgress() != nil {
					progress++
				}
				if event.GetResult() != nil {
					result = event.GetResult().Output
				}
			}
			if progress == 0 || result != "done after 3 steps" {
				return fmt.Errorf("%d progress events, result %q", progress, result)
			}
			return nil
		}},
		{"an MCP error result is TOOL_EXECUTION_FAILED", func() error {
			_, err := client.CallTool(context.Background(), call("", "sdk__fail", `{"reason": "disk full"}`))
			if err := rpcError(err, codes.Unknown, "TOOL_EXECUTION_FAILED"); err != nil {
				return err
			}
			if message := status.Convert(err).Message(); !strings.Contains(message, "disk full") {
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
