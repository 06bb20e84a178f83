package provider_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/llmworker/llmworker/sdk/go/provider"
)

type Shout struct {
	Text string `json:"text" jsonschema:"description=what to shout"`
}

// A tool is a function of a typed argument struct; its input schema comes from the struct.
func ExampleTool() {
	shout := provider.Tool("shout", "Upper-case a text",
		func(_ context.Context, in Shout) (string, error) { return strings.ToUpper(in.Text), nil },
		provider.ReadOnly())
	if _, err := provider.New(shout); err != nil {
		panic(err)
	}
	fmt.Println(shout.Message().GetInputSchemaJson())
	// Output:
	// {"properties":{"text":{"type":"string","description":"what to shout"}},"additionalProperties":false,"type":"object","required":["text"]}
}
