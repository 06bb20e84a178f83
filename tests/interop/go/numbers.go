package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
)

// What the server says of a literal JSON does not have: NaN and the infinities, and a number
// a 64-bit float reads as infinity.
const (
	notFinite  = "is not JSON (JSON numbers are finite)"
	outOfRange = "is out of the range of a 64-bit float"
)

// notJSON are the literals sent, each with what the server says of it.
var notJSON = []struct{ literal, says string }{
	{"NaN", notFinite},
	{"Infinity", notFinite},
	{"-Infinity", notFinite},
	{"1e400", outOfRange},
	{"-1e400", outOfRange},
}

// invalidArgument prefixes the tool error of a TOOL_INVALID_ARGUMENT in a CallResult's
// output; CallTool's status message has toolFailed before it.
const (
	invalidArgument = "Invalid argument: "
	toolFailed      = "Tool execution failed: "
)

// numbers runs the checks of numbers that are not JSON in a call's input_json; the streamer
// reads CallToolStream.
type numbers struct {
	streamer
}

func runNumbers(target string) error {
	client, err := llmworker.Dial(target, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("numbers connect: %w", err)
	}
	defer client.Close()
	n := &numbers{streamer{client: client}}
	for _, number := range notJSON {
		if err := n.refused(number.literal, number.says); err != nil {
			return fmt.Errorf("numbers %s: %w", number.literal, err)
		}
		fmt.Printf("OK numbers %s refused naming the field\n", number.literal)
	}
	return runChecks("numbers", []check{
		{"stream", "stream refused", n.streamRefused},
		{"batch", "batch refuses only that call", n.batchRefusesOne},
		{"nested", "a nested field refused naming its path", n.nestedRefused},
		{"serving", "server still serves", n.stillServes},
	})
}

// countdownWith is a countdown of one step whose delay is literal, as the JSON text reads it
// (the SDK sends a json.RawMessage input as it is).
func countdownWith(callID, literal string) llmworker.Call {
	return call(callID, "countdown", fmt.Sprintf(`{"n": 1, "delay": %s}`, literal))
}

// refusal is the tool error naming the field, e.g. "$.delay: NaN is not JSON (JSON numbers are finite)".
func refusal(literal, says string) string {
	return fmt.Sprintf("$.delay: %s %s", literal, says)
}

// refusedStatus verifies that err is INVALID_ARGUMENT / TOOL_INVALID_ARGUMENT, its message and
// its ErrorInfo's tool_error naming $.delay and saying what is wrong with literal.
func refusedStatus(err error, literal, says string) error {
	failed, err := failure(err, codes.InvalidArgument, "TOOL_INVALID_ARGUMENT")
	if err != nil {
		return err
	}
	want := refusal(literal, says)
	if message := failed.Message; !strings.HasPrefix(message, toolFailed+invalidArgument+want) {
		return fmt.Errorf("message %q, want it to start %q", message, toolFailed+invalidArgument+want)
	}
	metadata := failed.Metadata
	if toolError := metadata["tool_error"]; !strings.HasPrefix(toolError, want) || metadata["tool"] != "countdown" {
		return fmt.Errorf("ErrorInfo metadata %v, want tool countdown and a tool_error starting %q", metadata, want)
	}
	return nil
}

// refused calls countdown with literal as its delay: refused before the tool runs.
func (n *numbers) refused(literal, says string) error {
	countdown := countdownWith("", literal)
	_, err := n.client.CallTool(context.Background(), countdown.Name, countdown.Input)
	return refusedStatus(err, literal, says)
}

// streamRefused streams countdown with NaN as its delay: the stream ends refused, with no event.
func (n *numbers) streamRefused() error {
	events, err := n.events(countdownWith("", "NaN"))
	if len(events) != 0 {
		return fmt.Errorf("events %v before the end, want none", kinds(events))
	}
	return refusedStatus(err, "NaN", notFinite)
}

// batchRefusesOne sends echo and countdown with NaN in one batch: it completes, echo's result
// fine, countdown's an error naming the field.
func (n *numbers) batchRefusesOne() error {
	reply, err := n.client.CallTools(context.Background(), []llmworker.Call{
		call("echo", "echo", `{"text":"ok"}`),
		countdownWith("nan", "NaN"),
	})
	if err != nil {
		return err
	}
	results := reply.Completed
	if ids := resultIDs(results); !slices.Equal(ids, []string{"echo", "nan"}) {
		return fmt.Errorf("outcome %v, want completed with results echo, nan", reply)
	}
	refused := results[1]
	if err := errors.Join(resultOK(results[0], "ok"),
		resultError(refused, codes.InvalidArgument, "TOOL_INVALID_ARGUMENT")); err != nil {
		return err
	}
	if err := refusedStatus(llmworker.ResultError(refused), "NaN", notFinite); err != nil {
		return fmt.Errorf("result nan: %w", err)
	}
	if want := invalidArgument + refusal("NaN", notFinite); !strings.HasPrefix(refused.Output, want) {
		return fmt.Errorf("result nan: output %q, want it to start %q", refused.Output, want)
	}
	return nil
}

// nestedRefused sends Infinity deep in a pydantic model's field (validate_order's
// unit_price), which ended INTERNAL before: refused naming its whole path.
func (n *numbers) nestedRefused() error {
	order := `{"order": {"customer": "c", "ship_to": {"street": "s", "city": "c", ` +
		`"postcode": "1234"}, "lines": [{"sku": "a", "quantity": 1, "unit_price": Infinity}]}}`
	_, err := n.client.CallTool(context.Background(), "validate_order", json.RawMessage(order))
	failed, err := failure(err, codes.InvalidArgument, "TOOL_INVALID_ARGUMENT")
	if err != nil {
		return err
	}
	want := "$.order.lines[0].unit_price: Infinity " + notFinite
	if toolError := failed.Metadata["tool_error"]; !strings.HasPrefix(toolError, want) {
		return fmt.Errorf("tool_error %q, want it to start %q", toolError, want)
	}
	return nil
}

// stillServes calls countdown with a finite delay after the refusals.
func (n *numbers) stillServes() error {
	countdown := countdownWith("", "0")
	reply, err := n.client.CallTool(context.Background(), countdown.Name, countdown.Input)
	if err != nil {
		return fmt.Errorf("countdown with delay 0: %w", err)
	}
	if reply.Output != "1\n" {
		return fmt.Errorf("countdown with delay 0: output %q, want %q", reply.Output, "1\n")
	}
	return nil
}
