package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// jsonObject is a JSON object whose values are decoded on demand.
type jsonObject map[string]json.RawMessage

// formatCase is one provider format: its request, the file Python wrote with the bytes it
// produced in-process, and the check of each entry's shape (i is its index, last whether
// it is the last entry).
type formatCase struct {
	name    string
	format  pb.DefinitionFormat
	options []llmworker.ListOption
	file    string
	entry   func(entry jsonObject, i int, last bool) error
}

func runFormats(target, dir string) error {
	client, err := llmworker.Dial(target, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("formats connect: %w", err)
	}
	defer client.Close()

	cases := []formatCase{
		{"openai_chat_strict", pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT_STRICT, nil,
			"openai_chat_strict.json", openAIChatStrictEntry},
		{"anthropic", pb.DefinitionFormat_DEFINITION_FORMAT_ANTHROPIC, []llmworker.ListOption{llmworker.WithCacheControl()},
			"anthropic.json", anthropicEntry},
	}
	fingerprints := map[string]string{}
	for _, c := range cases {
		fingerprint, err := checkFormat(client, dir, c)
		if err != nil {
			return fmt.Errorf("formats %s: %w", c.name, err)
		}
		fingerprints[c.name] = fingerprint
		fmt.Println("OK formats", c.name)
	}

	known := fingerprints["openai_chat_strict"]
	again, err := client.Service().ListDefinitionsSorted(context.Background(), &pb.ListDefinitionsSortedRequest{
		Format: pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT_STRICT, KnownFingerprint: known})
	if err != nil {
		return fmt.Errorf("formats unchanged: %w", err)
	}
	if !again.Unchanged || again.DefinitionsJson != "" || len(again.Definitions) != 0 {
		return fmt.Errorf("formats unchanged: unchanged=%v definitions_json %d bytes definitions=%d, want true, 0, 0",
			again.Unchanged, len(again.DefinitionsJson), len(again.Definitions))
	}
	fmt.Println("OK formats unchanged for a known fingerprint")

	_, err = client.ListDefinitionsIn(context.Background(), pb.DefinitionFormat(99))
	if err := rpcError(err, codes.InvalidArgument, "INVALID_REQUEST"); err != nil {
		return fmt.Errorf("formats unknown format: %w", err)
	}
	fmt.Println("OK formats unknown format refused")

	checks := []struct {
		name, ok string
		run      func(*llmworker.Client) error
	}{
		{"provider openai_chat", "provider tool calls answered in openai_chat", providerOpenAIChat},
		{"provider anthropic", "provider tool calls paused and resumed in anthropic", providerAnthropicResumed},
		{"provider no format", "provider output without a format refused", providerWithoutFormat},
	}
	for _, check := range checks {
		if err := check.run(client); err != nil {
			return fmt.Errorf("formats %s: %w", check.name, err)
		}
		fmt.Println("OK formats", check.ok)
	}
	return nil
}

// jsonText renders a Go value as the JSON text a provider's API would have returned.
func jsonText(value any) string {
	text, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	return string(text)
}

// providerOpenAIChat runs an OpenAI Chat assistant message with a known and an unknown tool
// call: the answer is the {"role":"tool"} messages, the unknown tool's as its error text.
func providerOpenAIChat(client *llmworker.Client) error {
	output := jsonText(map[string]any{
		"role": "assistant",
		"tool_calls": []any{
			map[string]any{"id": "call_1", "type": "function",
				"function": map[string]any{"name": "echo", "arguments": `{"text": "hi"}`}},
			map[string]any{"id": "call_2", "type": "function",
				"function": map[string]any{"name": "no_such_tool", "arguments": "{}"}},
		},
	})
	answered, paused, err := client.RunProviderToolCalls(context.Background(),
		pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT, json.RawMessage(output))
	if err != nil {
		return err
	}
	if paused != nil {
		return fmt.Errorf("paused %v, want results_message_json", paused)
	}
	want := `[{"content":"hi","role":"tool","tool_call_id":"call_1"},` +
		`{"content":"Tool 'no_such_tool' not found","role":"tool","tool_call_id":"call_2"}]`
	if string(answered) != want {
		return fmt.Errorf("results_message_json\n got  %s\n want %s", answered, want)
	}
	return nil
}

// providerAnthropicResumed runs an Anthropic assistant message whose second tool_use needs
// approval: the batch pauses, and ResumeBatch approving it completes with the user message
// of tool_result blocks.
func providerAnthropicResumed(client *llmworker.Client) error {
	set, err := client.CallTool(context.Background(), "kv_set", map[string]string{"key": "fa", "value": "1"})
	if err != nil || set.Output != "ok" {
		return fmt.Errorf("kv_set fa: %v err %v", set, err)
	}
	output := jsonText(map[string]any{
		"role": "assistant",
		"content": []any{
			map[string]any{"type": "tool_use", "id": "toolu_1", "name": "echo", "input": map[string]any{"text": "x"}},
			map[string]any{"type": "tool_use", "id": "toolu_2", "name": "kv_delete", "input": map[string]any{"key": "fa"}},
		},
	})
	answered, paused, err := client.RunProviderToolCalls(context.Background(),
		pb.DefinitionFormat_DEFINITION_FORMAT_ANTHROPIC, json.RawMessage(output))
	if err != nil {
		return err
	}
	if paused == nil {
		return fmt.Errorf("answered %s, want paused", answered)
	}
	if paused.ResumeToken == "" {
		return fmt.Errorf("paused without a resume_token: %v", paused)
	}
	type pending struct {
		id       string
		awaiting bool
	}
	var got []pending
	for _, p := range paused.PendingCalls {
		got = append(got, pending{p.CallId, p.AwaitingApproval})
	}
	if want := []pending{{"toolu_1", false}, {"toolu_2", true}}; !slices.Equal(got, want) {
		return fmt.Errorf("pending_calls %v (id, awaiting_approval), want %v", got, want)
	}
	// The SDK's Resume gives results; the provider format's message comes with the raw stub.
	resumed, err := client.Service().ResumeBatch(context.Background(), &pb.ResumeBatchRequest{
		ResumeToken: paused.ResumeToken, Decisions: []llmworker.Decision{llmworker.Approve("toolu_2")}})
	if err != nil {
		return fmt.Errorf("ResumeBatch: %w", err)
	}
	completed := resumed.GetCompleted()
	if completed == nil {
		return fmt.Errorf("ResumeBatch outcome %v, want completed", resumed)
	}
	want := `{"content":[{"content":"x","tool_use_id":"toolu_1","type":"tool_result"},` +
		`{"content":"deleted","tool_use_id":"toolu_2","type":"tool_result"}],"role":"user"}`
	if completed.ResultsMessageJson != want {
		return fmt.Errorf("completed.results_message_json\n got  %s\n want %s", completed.ResultsMessageJson, want)
	}
	return nil
}

// providerWithoutFormat sends model output without a format: INVALID_ARGUMENT /
// INVALID_REQUEST.
func providerWithoutFormat(client *llmworker.Client) error {
	_, _, err := client.RunProviderToolCalls(context.Background(), pb.DefinitionFormat_DEFINITION_FORMAT_UNSPECIFIED, json.RawMessage("{}"))
	return rpcError(err, codes.InvalidArgument, "INVALID_REQUEST")
}

// checkFormat lists the definitions in one format, checks them against the file Python
// wrote and the format's shape, and returns the fingerprint.
func checkFormat(client *llmworker.Client, dir string, c formatCase) (string, error) {
	want, err := os.ReadFile(filepath.Join(dir, c.file))
	if err != nil {
		return "", err
	}
	got, err := client.ListDefinitionsIn(context.Background(), c.format, c.options...)
	if err != nil {
		return "", err
	}
	// The fingerprint and the rest of the response come with the raw stub.
	request := &pb.ListDefinitionsSortedRequest{Format: c.format}
	for _, option := range c.options {
		option(request)
	}
	listed, err := client.Service().ListDefinitionsSorted(context.Background(), request)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(got, []byte(listed.DefinitionsJson)) {
		return "", fmt.Errorf("ListDefinitionsIn and the stub differ:\n %s\n %s", got, listed.DefinitionsJson)
	}
	if !bytes.Equal(got, want) {
		at := 0
		for at < len(got) && at < len(want) && got[at] == want[at] {
			at++
		}
		return "", fmt.Errorf("definitions_json (%d bytes) differs from %s (%d bytes) at byte %d:\n got  %s\n want %s",
			len(got), c.file, len(want), at, got, want)
	}
	if len(listed.Definitions) != 0 {
		return "", fmt.Errorf("definitions has %d entries, want none with a format", len(listed.Definitions))
	}
	sum := sha256.Sum256(got)
	if digest := hex.EncodeToString(sum[:]); listed.Fingerprint != digest {
		return "", fmt.Errorf("fingerprint %q, want sha256(definitions_json) %s", listed.Fingerprint, digest)
	}
	if listed.Unchanged {
		return "", fmt.Errorf("unchanged=true without a known fingerprint")
	}
	var entries []jsonObject
	if err := json.Unmarshal(got, &entries); err != nil {
		return "", fmt.Errorf("definitions_json is not a JSON array of objects: %w", err)
	}
	if len(entries) == 0 {
		return "", fmt.Errorf("definitions_json is an empty array")
	}
	for i, entry := range entries {
		if err := c.entry(entry, i, i == len(entries)-1); err != nil {
			return "", fmt.Errorf("entry %d %s: %w", i, entryJSON(entry), err)
		}
	}
	return listed.Fingerprint, nil
}

// openAIChatStrictEntry checks {"type":"function","function":{"name",...,"parameters":
// {...,"additionalProperties":false},"strict":true}}.
func openAIChatStrictEntry(entry jsonObject, _ int, _ bool) error {
	if err := member(entry, "type", "function"); err != nil {
		return err
	}
	var function jsonObject
	if err := field(entry, "function", &function); err != nil {
		return err
	}
	var name string
	if err := field(function, "name", &name); err != nil || name == "" {
		return fmt.Errorf("function.name %q: want a non-empty string (%v)", name, err)
	}
	if err := member(function, "strict", true); err != nil {
		return fmt.Errorf("function.%w", err)
	}
	var parameters jsonObject
	if err := field(function, "parameters", &parameters); err != nil {
		return fmt.Errorf("function.%w", err)
	}
	if err := member(parameters, "additionalProperties", false); err != nil {
		return fmt.Errorf("function.parameters.%w", err)
	}
	return nil
}

// anthropicEntry checks {"name","description","input_schema"} with "cache_control":
// {"type":"ephemeral"} on the last entry only.
func anthropicEntry(entry jsonObject, _ int, last bool) error {
	var name, description string
	var schema jsonObject
	if err := field(entry, "name", &name); err != nil || name == "" {
		return fmt.Errorf("name %q: want a non-empty string (%v)", name, err)
	}
	if err := field(entry, "description", &description); err != nil {
		return err
	}
	if err := field(entry, "input_schema", &schema); err != nil {
		return err
	}
	cacheControl, ok := entry["cache_control"]
	switch {
	case last && !ok:
		return fmt.Errorf("the last entry has no cache_control")
	case last:
		var got, want any
		_ = json.Unmarshal([]byte(`{"type":"ephemeral"}`), &want)
		if err := json.Unmarshal(cacheControl, &got); err != nil || !jsonEqual(got, want) {
			return fmt.Errorf("cache_control %s, want {\"type\":\"ephemeral\"}", cacheControl)
		}
	case ok:
		return fmt.Errorf("cache_control %s on an entry that is not the last", cacheControl)
	}
	return nil
}

// field decodes object[key] into target, failing when it is missing or of another type.
func field(object jsonObject, key string, target any) error {
	raw, ok := object[key]
	if !ok {
		return fmt.Errorf("%s missing", key)
	}
	if err := json.Unmarshal(raw, target); err != nil {
		return fmt.Errorf("%s %s: %w", key, raw, err)
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return fmt.Errorf("%s is null", key)
	}
	return nil
}

// member verifies that object[key] is the JSON value of want.
func member(object jsonObject, key string, want any) error {
	raw, ok := object[key]
	if !ok {
		return fmt.Errorf("%s missing, want %v", key, want)
	}
	var got any
	if err := json.Unmarshal(raw, &got); err != nil || got != want {
		return fmt.Errorf("%s %s, want %v", key, raw, want)
	}
	return nil
}

// jsonEqual compares two decoded JSON values.
func jsonEqual(a, b any) bool {
	left, errLeft := json.Marshal(a)
	right, errRight := json.Marshal(b)
	return errLeft == nil && errRight == nil && bytes.Equal(left, right)
}

// entryJSON renders an entry for an error message.
func entryJSON(entry jsonObject) string {
	text, err := json.Marshal(entry)
	if err != nil {
		return fmt.Sprint(entry)
	}
	if len(text) > 300 {
		return string(text[:300]) + "..."
	}
	return string(text)
}
