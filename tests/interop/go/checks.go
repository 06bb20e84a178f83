package main

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// typeName is the SDK's error type of a reason: TOOL_NOT_FOUND is llmworker.ToolNotFound.
func typeName(reason string) string {
	words := strings.Split(strings.ToLower(reason), "_")
	for i, word := range words {
		words[i] = strings.ToUpper(word[:1]) + word[1:]
	}
	return strings.Join(words, "")
}

// failure verifies that err is the SDK's typed error of reason (llmworker.FromError of a raw
// stub's error, or what an SDK call returned), with code, and gives its details.
func failure(err error, code codes.Code, reason string) (*llmworker.Failure, error) {
	if err == nil {
		return nil, fmt.Errorf("succeeded, want %v / %s", code, reason)
	}
	typed := llmworker.FromError(err)
	var failed *llmworker.Failure
	if !errors.As(typed, &failed) {
		return nil, fmt.Errorf("%v is not a status the server sent, want %v / %s", err, code, reason)
	}
	if failed.Code != code {
		return nil, fmt.Errorf("code %v, want %v (%q)", failed.Code, code, failed.Message)
	}
	if failed.Reason != reason {
		return nil, fmt.Errorf("reason %q, want %s (%v %q)", failed.Reason, reason, failed.Code, failed.Message)
	}
	if got := reflect.TypeOf(typed).Name(); got != typeName(reason) {
		return nil, fmt.Errorf("the SDK's error of %s is a %T, want llmworker.%s", reason, typed, typeName(reason))
	}
	return failed, nil
}

// rpcError verifies that an RPC failed with code and reason.
func rpcError(err error, code codes.Code, reason string) error {
	_, err = failure(err, code, reason)
	return err
}

// resultError verifies a batch result that failed with code and reason (llmworker.ResultError).
func resultError(result *pb.CallResult, code codes.Code, reason string) error {
	if !result.GetIsError() {
		return fmt.Errorf("result %s: is_error=false, want %v / %s", result.GetCallId(), code, reason)
	}
	if _, err := failure(llmworker.ResultError(result), code, reason); err != nil {
		return fmt.Errorf("result %s: %w", result.GetCallId(), err)
	}
	return nil
}

// expectedError is what a failing call must carry: code, reason and message.
type expectedError struct {
	code    codes.Code
	reason  string
	message string
}

// checkError verifies a failed call and prints its OK line.
func checkError(name string, err error, want expectedError) error {
	failed, err := failure(err, want.code, want.reason)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if failed.Message != want.message {
		return fmt.Errorf("%s: message %q, want %q", name, failed.Message, want.message)
	}
	fmt.Printf("OK %s (%v, %s)\n", name, failed.Code, failed.Reason)
	return nil
}

// check is one check of a suite: run it, and say ok when it passes.
type check struct {
	name, ok string
	run      func() error
}

// runChecks runs checks in order, printing "OK <suite> <ok>" for each that passes; the first
// failure ends the suite, named "<suite> <name>".
func runChecks(suite string, checks []check) error {
	for _, c := range checks {
		if err := c.run(); err != nil {
			return fmt.Errorf("%s %s: %w", suite, c.name, err)
		}
		fmt.Println("OK", suite, c.ok)
	}
	return nil
}
