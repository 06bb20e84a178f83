package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "llmworker/interop/gen/llmworker/v1"
)

// expectedError is what a failing call must carry: code, ErrorInfo reason and message.
type expectedError struct {
	code    codes.Code
	reason  string
	message string
}

func checkError(name string, err error, want expectedError) error {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return fmt.Errorf("%s: expected status %v, got %v", name, want.code, err)
	}
	if st.Code() != want.code {
		return fmt.Errorf("%s: code %v, want %v (%s)", name, st.Code(), want.code, st.Message())
	}
	if st.Message() != want.message {
		return fmt.Errorf("%s: message %q, want %q", name, st.Message(), want.message)
	}
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			if info.Domain != "llmworker" || info.Reason != want.reason {
				return fmt.Errorf("%s: ErrorInfo %s/%s, want llmworker/%s", name, info.Domain, info.Reason, want.reason)
			}
			fmt.Printf("OK %s (%v, %s)\n", name, st.Code(), info.Reason)
			return nil
		}
	}
	return fmt.Errorf("%s: no ErrorInfo detail in the status", name)
}

func runClient(target, fingerprint string) error {
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	client := pb.NewToolServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	listed, err := client.ListDefinitionsSorted(ctx, &pb.ListDefinitionsSortedRequest{})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	names := make([]string, 0, len(listed.Definitions))
	for _, definition := range listed.Definitions {
		names = append(names, definition.Name)
	}
	if !sort.StringsAreSorted(names) || len(names) == 0 {
		return fmt.Errorf("list: names %v are not sorted", names)
	}
	if listed.Fingerprint != fingerprint {
		return fmt.Errorf("list: fingerprint %s, Python computed %s", listed.Fingerprint, fingerprint)
	}
	fmt.Printf("OK list %d sorted definitions, fingerprint %s\n", len(names), listed.Fingerprint[:12])

	again, err := client.ListDefinitionsSorted(ctx, &pb.ListDefinitionsSortedRequest{KnownFingerprint: fingerprint})
	if err != nil || !again.Unchanged || len(again.Definitions) != 0 {
		return fmt.Errorf("list with known fingerprint: unchanged=%v definitions=%d err=%v", again.GetUnchanged(), len(again.GetDefinitions()), err)
	}
	fmt.Println("OK list unchanged for a known fingerprint")

	got, err := client.GetTool(ctx, &pb.GetToolRequest{Name: "echo"})
	if err != nil || got.Definition.InputSchemaJson == "" {
		return fmt.Errorf("get echo: %v", err)
	}
	fmt.Println("OK get echo")

	reply, err := client.CallTool(ctx, &pb.CallToolRequest{Name: "echo", InputJson: `{"text": "from go ✓"}`})
	if err != nil || reply.Output != "from go ✓" {
		return fmt.Errorf("call echo: output %q err %v", reply.GetOutput(), err)
	}
	fmt.Println("OK call echo")

	_, err = client.CallTool(ctx, &pb.CallToolRequest{Name: "nope", InputJson: "{}"})
	if err := checkError("unknown tool", err, expectedError{codes.NotFound, "TOOL_NOT_FOUND", "Tool 'nope' not found"}); err != nil {
		return err
	}
	_, err = client.CallTool(ctx, &pb.CallToolRequest{Name: "echo", InputJson: "[]"})
	if err := checkError("invalid arguments", err, expectedError{codes.InvalidArgument, "TOOL_INVALID_ARGUMENT",
		"Tool execution failed: Invalid argument: arguments must be a JSON object, got an array"}); err != nil {
		return err
	}

	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	started := time.Now()
	_, err = client.CallTool(short, &pb.CallToolRequest{Name: "sleep", InputJson: `{"seconds": 30}`})
	if status.Code(err) != codes.DeadlineExceeded || time.Since(started) > 5*time.Second {
		return fmt.Errorf("deadline: got %v after %v", err, time.Since(started))
	}
	fmt.Printf("OK deadline honoured (%v after %v)\n", codes.DeadlineExceeded, time.Since(started).Round(time.Millisecond))
	return nil
}
