package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

func runClient(target, fingerprint string) error {
	client, err := llmworker.Dial(target)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	listed, err := client.ListDefinitions(ctx)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	names := make([]string, 0, len(listed.Tools))
	for _, definition := range listed.Tools {
		names = append(names, definition.Name)
	}
	if !sort.StringsAreSorted(names) || len(names) == 0 {
		return fmt.Errorf("list: names %v are not sorted", names)
	}
	if listed.Fingerprint != fingerprint {
		return fmt.Errorf("list: fingerprint %s, Python computed %s", listed.Fingerprint, fingerprint)
	}
	fmt.Printf("OK list %d sorted definitions, fingerprint %s\n", len(names), listed.Fingerprint[:12])

	// The SDK does not wrap a listing against a known fingerprint: the generated stub does.
	again, err := client.Service().ListDefinitionsSorted(ctx, &pb.ListDefinitionsSortedRequest{KnownFingerprint: fingerprint})
	if err != nil || !again.Unchanged || len(again.Definitions) != 0 {
		return fmt.Errorf("list with known fingerprint: unchanged=%v definitions=%d err=%v", again.GetUnchanged(), len(again.GetDefinitions()), err)
	}
	fmt.Println("OK list unchanged for a known fingerprint")

	got, err := client.GetTool(ctx, "echo")
	if err != nil || got.InputSchemaJson == "" {
		return fmt.Errorf("get echo: %v", err)
	}
	fmt.Println("OK get echo")

	reply, err := client.CallTool(ctx, "echo", map[string]string{"text": "from go ✓"})
	if err != nil || reply.Output != "from go ✓" {
		return fmt.Errorf("call echo: %v err %v", reply, err)
	}
	fmt.Println("OK call echo")

	_, err = client.CallTool(ctx, "nope", nil)
	if err := checkError("unknown tool", err, expectedError{codes.NotFound, "TOOL_NOT_FOUND", "Tool 'nope' not found"}); err != nil {
		return err
	}
	_, err = client.CallTool(ctx, "echo", []string{})
	if err := checkError("invalid arguments", err, expectedError{codes.InvalidArgument, "TOOL_INVALID_ARGUMENT",
		"Tool execution failed: Invalid argument: arguments must be a JSON object, got an array"}); err != nil {
		return err
	}

	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	started := time.Now()
	_, err = client.CallTool(short, "sleep", map[string]int{"seconds": 30})
	// The client's own deadline: a Failure with no reason, and status.Code still reads it.
	var failed *llmworker.Failure
	if !errors.As(err, &failed) || failed.Code != codes.DeadlineExceeded || failed.Reason != "" || time.Since(started) > 5*time.Second {
		return fmt.Errorf("deadline: got %#v after %v", err, time.Since(started))
	}
	fmt.Printf("OK deadline honoured (%v after %v)\n", codes.DeadlineExceeded, time.Since(started).Round(time.Millisecond))
	return nil
}
