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

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"

	pb "llmworker/interop/gen/llmworker/v1"
)

// jsonObject is a JSON object whose values are decoded on demand.
type jsonObject map[string]json.RawMessage

// formatCase is one provider format: its request, the file Python wrote with the bytes it
// produced in-process, and the check of each entry's shape (i is its index, last whether
// it is the last entry).
type formatCase struct {
	name    string
	request *pb.ListDefinitionsSortedRequest
	file    string
	entry   func(entry jsonObject, i int, last bool) error
}

func runFormats(target, dir string) error {
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(withTimeout))
	if err != nil {
		return fmt.Errorf("formats connect: %w", err)
	}
	defer conn.Close()
	client := pb.NewToolServiceClient(conn)

	cases := []formatCase{
		{"openai_chat_strict", &pb.ListDefinitionsSortedRequest{Format: pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT_STRICT},
			"openai_chat_strict.json", openAIChatStrictEntry},
		{"anthropic", &pb.ListDefinitionsSortedRequest{Format: pb.DefinitionFormat_DEFINITION_FORMAT_ANTHROPIC, AnthropicCacheControl: true},
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
	again, err := client.ListDefinitionsSorted(context.Background(), &pb.ListDefinitionsSortedRequest{
		Format: pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT_STRICT, KnownFingerprint: known})
	if err != nil {
		return fmt.Errorf("formats unchanged: %w", err)
	}
	if !again.Unchanged || again.DefinitionsJson != "" || len(again.Definitions) != 0 {
		return fmt.Errorf("formats unchanged: unchanged=%v definitions_json %d bytes definitions=%d, want true, 0, 0",
			again.Unchanged, len(again.DefinitionsJson), len(again.Definitions))
	}
	fmt.Println("OK formats unchanged for a known fingerprint")

	_, err = client.ListDefinitionsSorted(context.Background(), &pb.ListDefinitionsSortedRequest{Format: pb.DefinitionFormat(99)})
	if err := rpcError(err, codes.InvalidArgument, "INVALID_REQUEST"); err != nil {
		return fmt.Errorf("formats unknown format: %w", err)
	}
	fmt.Println("OK formats unknown format refused")
	return nil
}

// checkFormat lists the definitions in one format, checks them against the file Python
// wrote and the format's shape, and returns the fingerprint.
func checkFormat(client pb.ToolServiceClient, dir string, c formatCase) (string, error) {
	want, err := os.ReadFile(filepath.Join(dir, c.file))
	if err != nil {
		return "", err
	}
	listed, err := client.ListDefinitionsSorted(context.Background(), c.request)
	if err != nil {
		return "", err
	}
	got := []byte(listed.DefinitionsJson)
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
