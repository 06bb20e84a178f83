package provider

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

type base struct {
	ID string `json:"id"`
}

type order struct {
	base
	Count  uint8               `json:"count"`
	Note   *string             `json:"note,omitempty"`
	Labels map[string]int      `json:"labels,omitempty"`
	Ship   struct{ To string } `json:"ship,omitempty"`
}

// toolErrorOf is the tool_error a refused call carries ("" when it ran).
func toolErrorOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	for _, detail := range status.Convert(err).Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok && info.GetReason() == "TOOL_INVALID_ARGUMENT" {
			return info.GetMetadata()["tool_error"]
		}
	}
	t.Fatalf("not a TOOL_INVALID_ARGUMENT: %v", err)
	return ""
}

func TestTheArgumentsAreHeldToTheSchemaNamingEachField(t *testing.T) {
	tool := Tool("order", "Take an order", func(_ context.Context, in order) (string, error) { return in.ID, nil })
	if tool.err != nil {
		t.Fatal(tool.err)
	}
	for _, c := range []struct{ input, says string }{
		{`{"id": "a", "count": 1}`, ""},
		{`{"id": "a", "count": 1, "note": null, "labels": {"x": 1}, "ship": {"To": "b"}}`, ""},
		{`{"count": 1}`, "id: Field required"},
		{`{"id": null, "count": 1}`, "id: Field required"},
		{`{"id": "a", "count": 1, "zz": 1, "aa": 2}`, "aa: unknown field; remove it; zz: unknown field; remove it"},
		{`{}`, "id: Field required; count: Field required"},
		{`{"id": 7, "count": 1}`, "id: Input should be a valid string (got a number)"},
		{`{"id": "a", "count": 300}`, "count: Input should be a valid integer (got 300: not a whole number, or out of range for uint8)"},
		{`{"id": "a", "count": 1, "labels": {"x": "y"}}`, "labels: Input should be a valid integer (got a string)"},
		{`{"id": "a", "count": 1, "ship": {"To": "b", "z": 1}}`, "z: unknown field; remove it"},
		{`[1]`, "arguments must be a JSON object, got an array"},
		{`null`, "arguments must be a JSON object, got null"},
	} {
		_, err := tool.run(context.Background(), []byte(c.input))
		if got := toolErrorOf(t, err); got != c.says {
			t.Errorf("%s: %q, want %q", c.input, got, c.says)
		}
	}
	_, err := tool.run(context.Background(), []byte(`{"id": `))
	if got := toolErrorOf(t, err); !strings.HasPrefix(got, "input is not valid JSON (") || !strings.HasSuffix(got, "); send one JSON object") {
		t.Errorf("invalid JSON: %q", got)
	}
}
