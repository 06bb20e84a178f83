package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

const (
	balanceCallTimeout     = 5 * time.Second
	balanceListTimeout     = 10 * time.Second
	balanceWhoamiInputJSON = `{}`
	balanceEchoInputJSON   = `{"text":"x"}`
)

// balanceTool is one tool the balance run calls, with the input it sends.
type balanceTool struct {
	name  string
	input string
}

// tally counts one tool's calls: how many started, succeeded, and failed by status code.
type tally struct {
	Retrying bool           `json:"retrying"`
	Calls    int            `json:"calls"`
	OK       int            `json:"ok"`
	Failed   map[string]int `json:"failed"`
}

// retryIsSafe is llmworker._client.balancing.retry_is_safe: a tool annotated idempotent or read-only
// may run again after UNAVAILABLE.
func retryIsSafe(definition *pb.ToolDefinition) bool {
	hints := definition.GetAnnotations()
	return hints.GetIdempotentHint() || hints.GetReadOnlyHint()
}

// codeName is the canonical name of a status code: UNAVAILABLE, DEADLINE_EXCEEDED, ...
func codeName(code codes.Code) string {
	var name strings.Builder
	previous := rune(0)
	for _, r := range code.String() {
		if unicode.IsUpper(r) && unicode.IsLower(previous) {
			name.WriteByte('_')
		}
		name.WriteRune(unicode.ToUpper(r))
		previous = r
	}
	return name.String()
}

// runBalance calls whoami (read-only and idempotent: through the retrying connection) and
// echo (not annotated: through the plain one) from concurrency goroutines for seconds, over
// every replica target names, and prints the tallies as one JSON line.
func runBalance(target string, seconds float64, concurrency int) error {
	if concurrency < 1 || seconds <= 0 {
		return fmt.Errorf("balance: -seconds and -concurrency must be positive")
	}
	// The SDK's service configs are llmworker._client.balancing's: round robin with health
	// checks, and WithRetries for the tools annotated idempotent or read-only.
	plain, err := llmworker.Dial(target, llmworker.WithBalancing())
	if err != nil {
		return fmt.Errorf("balance: connect: %w", err)
	}
	defer plain.Close()
	retrying, err := llmworker.Dial(target, llmworker.WithBalancing(), llmworker.WithRetries())
	if err != nil {
		return fmt.Errorf("balance: connect: %w", err)
	}
	defer retrying.Close()

	ctx, cancel := context.WithTimeout(context.Background(), balanceListTimeout)
	listed, err := plain.ListDefinitions(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("balance: list: %w", err)
	}
	clients := map[string]*llmworker.Client{}
	tallies := map[string]*tally{}
	tools := []balanceTool{{"whoami", balanceWhoamiInputJSON}, {"echo", balanceEchoInputJSON}}
	for _, tool := range tools {
		for _, definition := range listed.Tools {
			if definition.Name == tool.name {
				client := plain
				if retryIsSafe(definition) {
					client = retrying
				}
				clients[tool.name] = client
				tallies[tool.name] = &tally{Retrying: client == retrying, Failed: map[string]int{}}
			}
		}
		if clients[tool.name] == nil {
			return fmt.Errorf("balance: the server lists no tool %q (is it --demo?)", tool.name)
		}
	}

	var mutex sync.Mutex
	var group sync.WaitGroup
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for range concurrency {
		group.Go(func() {
			for time.Now().Before(end) {
				for _, tool := range tools {
					mutex.Lock()
					counts := tallies[tool.name]
					counts.Calls++
					mutex.Unlock()
					ctx, cancel := context.WithTimeout(context.Background(), balanceCallTimeout)
					_, err := clients[tool.name].CallTool(ctx, tool.name, json.RawMessage(tool.input))
					cancel()
					mutex.Lock()
					if err == nil {
						counts.OK++
					} else {
						counts.Failed[codeName(status.Code(err))]++
					}
					mutex.Unlock()
				}
			}
		})
	}
	group.Wait()
	line, err := json.Marshal(tallies)
	if err != nil {
		return fmt.Errorf("balance: %w", err)
	}
	fmt.Println(string(line))
	return nil
}
