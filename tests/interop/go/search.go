package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// runSearch checks SearchTools against a server with the demo tools: the tool a query means
// first, scores best first, a prefix, a provider format in the same order, bad requests
// refused INVALID_ARGUMENT / INVALID_REQUEST, and no hit for words no tool has.
func runSearch(target string) error {
	client, err := llmworker.Dial(target, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("search connect: %w", err)
	}
	defer client.Close()
	// search is the SDK's SearchTools (limit 0: the server's default), its names best first.
	search := func(query string, limit int) ([]string, error) {
		found, err := client.SearchTools(context.Background(), query, limit)
		if err != nil {
			return nil, err
		}
		if !slices.IsSortedFunc(found, func(a, b llmworker.Found) int { return -cmpFloat(a.Score, b.Score) }) {
			return nil, fmt.Errorf("scores not best first: %v", found)
		}
		names := make([]string, len(found))
		for i, tool := range found {
			if tool.Score <= 0 {
				return nil, fmt.Errorf("%s scored %v, want a positive score", tool.Tool.GetName(), tool.Score)
			}
			names[i] = tool.Tool.GetName()
		}
		return names, nil
	}
	checks := []struct {
		ok  string
		run func() error
	}{
		{"the tool a query means comes first", func() error {
			for _, want := range []struct{ query, tool string }{
				{"calculate an arithmetic expression", "calculate"},
				{"delete a key", "kv_delete"},
			} {
				names, err := search(want.query, 3)
				if err != nil {
					return err
				}
				if len(names) == 0 || len(names) > 3 || names[0] != want.tool {
					return fmt.Errorf("%q found %v, want %s first (at most 3)", want.query, names, want.tool)
				}
			}
			return nil
		}},
		{"a word matches the words it begins", func() error {
			names, err := search("calc", 0)
			if err != nil {
				return err
			}
			if !slices.Contains(names, "calculate") {
				return fmt.Errorf("calc found %v", names)
			}
			return nil
		}},
		{"a provider format in the same order", func() error {
			names, err := search("key value", 4)
			if err != nil {
				return err
			}
			// The SDK's SearchTools has no format: the raw stub asks for one.
			response, err := client.Service().SearchTools(context.Background(), &pb.SearchToolsRequest{
				Query: "key value", Limit: 4, Format: pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT})
			if err != nil {
				return err
			}
			if len(response.Scores) != len(response.Definitions) {
				return fmt.Errorf("%d scores for %d definitions", len(response.Scores), len(response.Definitions))
			}
			var entries []struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal([]byte(response.DefinitionsJson), &entries); err != nil {
				return fmt.Errorf("definitions_json: %w", err)
			}
			formatted := make([]string, len(entries))
			for i, entry := range entries {
				if entry.Type != "function" {
					return fmt.Errorf("entry %d has type %q", i, entry.Type)
				}
				formatted[i] = entry.Function.Name
			}
			if len(names) == 0 || !slices.Equal(formatted, names) {
				return fmt.Errorf("formatted %v, definitions %v", formatted, names)
			}
			return nil
		}},
		{"bad requests refused naming the field", func() error {
			for _, bad := range []struct {
				query string
				limit int
				field string
			}{{"", 0, "query"}, {"key", 101, "limit"}} {
				_, err := client.SearchTools(context.Background(), bad.query, bad.limit)
				failed, err := failure(err, codes.InvalidArgument, "INVALID_REQUEST")
				if err != nil {
					return fmt.Errorf("%q limit %d: %w", bad.query, bad.limit, err)
				}
				if message := failed.Message; !strings.HasPrefix(message, bad.field+" ") {
					return fmt.Errorf("%q limit %d: the message %q does not name %s", bad.query, bad.limit, message, bad.field)
				}
			}
			names, err := search("echo", 0)
			if err != nil || len(names) == 0 || names[0] != "echo" {
				return fmt.Errorf("then echo found %v (%v)", names, err)
			}
			return nil
		}},
		{"words no tool has find nothing", func() error {
			names, err := search("zzzzqqqq nothing matches", 0)
			if err != nil {
				return err
			}
			if len(names) != 0 {
				return fmt.Errorf("found %v", names)
			}
			return nil
		}},
	}
	for _, check := range checks {
		if err := check.run(); err != nil {
			return fmt.Errorf("search %s: %w", check.ok, err)
		}
		fmt.Println("OK search", check.ok)
	}
	return nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
