package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
)

// slowSettle is how long the slow calls get to reach the server's tools before the burst.
const slowSettle = time.Second

// refusedByAdmission is the answer of admission control to a call over --max-concurrent-calls.
const refusedByAdmission = "RESOURCE_EXHAUSTED CONCURRENCY_LIMIT"

// runBurst holds slow countdowns on one connection, then fires burst echo calls at once on
// it: each must be answered OK or refused CONCURRENCY_LIMIT by admission, never by gRPC's own
// stream refusal (REFUSED_STREAM: a bare UNAVAILABLE, which clients do not retry).
func runBurst(target string, slow, burst int) error {
	if slow < 0 || burst < 1 {
		return fmt.Errorf("burst: -slow %d -burst %d, want -slow >= 0 and -burst >= 1", slow, burst)
	}
	client, err := llmworker.Dial(target)
	if err != nil {
		return fmt.Errorf("burst connect: %w", err)
	}
	defer client.Close()

	slowCtx, cancelSlow := context.WithCancel(context.Background())
	slowEnded := make(chan error, slow)
	for range slow {
		go func() {
			_, err := client.CallTool(slowCtx, "countdown", json.RawMessage(`{"n": 300, "delay": 0.1}`))
			slowEnded <- err
		}()
	}
	defer func() {
		cancelSlow()
		for range slow {
			<-slowEnded
		}
	}()
	time.Sleep(slowSettle)
	select {
	case err := <-slowEnded:
		slowEnded <- err // the deferred drain still counts it
		return fmt.Errorf("burst: a slow countdown ended before the burst: %v", err)
	default:
	}

	answers := make([]string, burst)
	start := make(chan struct{})
	var answered sync.WaitGroup
	for i := range burst {
		answered.Add(1)
		go func() {
			defer answered.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
			defer cancel()
			reply, err := client.CallTool(ctx, "echo", map[string]string{"text": "x"})
			answers[i] = burstAnswer(reply, err)
		}()
	}
	close(start)
	answered.Wait()

	counts := map[string]int{}
	for _, answer := range answers {
		counts[answer]++
	}
	fmt.Println("burst answers:", answerCounts(counts))
	for answer := range counts {
		if answer != "OK" && answer != refusedByAdmission {
			return fmt.Errorf("burst of %d on one connection: %s", burst, answerCounts(counts))
		}
	}
	fmt.Printf("OK burst of %d on one connection: only documented answers\n", burst)
	return nil
}

// burstAnswer names an echo's answer: OK, "CODE REASON" for an llmworker ErrorInfo (the
// SDK's typed error), or the code and message of anything else.
func burstAnswer(reply *llmworker.Result, err error) string {
	if err == nil {
		if reply.Output != "x" {
			return fmt.Sprintf("OK with output %q", reply.Output)
		}
		return "OK"
	}
	var failed *llmworker.Failure
	if !errors.As(err, &failed) {
		return fmt.Sprintf("not a gRPC status: %v", err)
	}
	if failed.Reason != "" {
		if _, typed := llmworker.FromError(err).(llmworker.ConcurrencyLimit); !typed && failed.Reason == "CONCURRENCY_LIMIT" {
			return fmt.Sprintf("%v %s without its SDK type", codeName(failed.Code), failed.Reason)
		}
		return fmt.Sprintf("%v %s", codeName(failed.Code), failed.Reason)
	}
	return fmt.Sprintf("%v without an llmworker ErrorInfo %q", codeName(failed.Code), failed.Message)
}

// answerCounts renders answer counts in a stable order, e.g. "OK=3, RESOURCE_EXHAUSTED CONCURRENCY_LIMIT=297".
func answerCounts(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for _, answer := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", answer, counts[answer]))
	}
	return strings.Join(parts, ", ")
}
