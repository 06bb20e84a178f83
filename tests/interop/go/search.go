package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "llmworker/interop/gen/llmworker/v1"
)

// runSearch checks SearchTools against a server with the demo tools: the tool a query means
// first, scores best first, a prefix, a provider format in the same order, bad requests
// refused INVALID_ARGUMENT / INVALID_REQUEST, and no hit for words no tool has.
func runSearch(target string) error {
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(withTimeout))
	if err != nil {
		return fmt.Errorf("search connect: %w", err)
	}
	defer conn.Close()
	client := pb.NewToolServiceClient(conn)
	search := func(request *pb.SearchToolsRequest) ([]string, *pb.SearchToolsResponse, error) {
		response, err := client.SearchTools(context.Background(), request)
		if err != nil {
			return nil, nil, err
		}
		if len(response.Scores) != len(response.Definitions) {
			return nil, nil, fmt.Errorf("%d scores for %d definitions", len(response.Scores), len(response.Definitions))
		}
		if !slices.IsSortedFunc(response.Scores, func(a, b float64) int { return -cmpFloat(a, b) }) {
			return nil, nil, fmt.Errorf("scores not best first: %v", response.Scores)
		}
		names := make([]string, len(response.Definitions))
		for i, definition := range response.Definitions {
			names[i] = definition.Name
		}
		return names, response, nil
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
				names, _, err := search(&pb.SearchToolsRequest{Query: want.query, Limit: 3})
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
			names, _, err := search(&pb.SearchToolsRequest{Query: "calc"})
			if err != nil {
				return err
			}
			if !slices.Contains(names, "calculate") {
				return fmt.Errorf("calc found %v", names)
			}
			return nil
		}},
		{"a provider format in the same order", func() error {
			names, response, err := search(&pb.SearchToolsRequest{Query: "key value", Limit: 4,
				Format: pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT})
			if err != nil {
				return err
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
				request *pb.SearchToolsRequest
				field   string
			}{{&pb.SearchToolsRequest{Query: ""}, "query"}, {&pb.SearchToolsRequest{Query: "key", Limit: 101}, "limit"}} {
				_, err := client.SearchTools(context.Background(), bad.request)
				if err := rpcError(err, codes.InvalidArgument, "INVALID_REQUEST"); err != nil {
					return fmt.Errorf("%v: %w", bad.request, err)
				}
				if message := status.Convert(err).Message(); !strings.HasPrefix(message, bad.field+" ") {
					return fmt.Errorf("%v: the message %q does not name %s", bad.request, message, bad.field)
				}
			}
			names, _, err := search(&pb.SearchToolsRequest{Query: "echo"})
			if err != nil || len(names) == 0 || names[0] != "echo" {
				return fmt.Errorf("then echo found %v (%v)", names, err)
			}
			return nil
		}},
		{"words no tool has find nothing", func() error {
			names, _, err := search(&pb.SearchToolsRequest{Query: "zzzzqqqq nothing matches"})
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
