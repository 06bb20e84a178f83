package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// cancelNoteWait is how long the cancellation check waits for the countdown's note; a
// countdown that was not cancelled runs for 100 s and more before it could end.
const cancelNoteWait = 10 * time.Second

// streamer runs the CallToolStream checks on the demo tools, through the SDK's iterator.
type streamer struct {
	client *llmworker.Client
}

func runStream(target string) error {
	client, err := llmworker.Dial(target, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("stream connect: %w", err)
	}
	defer client.Close()
	s := &streamer{client: client}
	return runChecks("stream", []check{
		{"countdown", "countdown: progress and chunks in order, then the result", s.countdown},
		{"plain tool", "a tool that does not stream sends its result only", s.plainTool},
		{"errors", "errors: CallTool's status and ErrorInfo", s.failures},
		{"cancel", "cancelling the stream cancels the tool", s.cancellation},
	})
}

// events reads a whole stream (call's tool and JSON input): its events, and the error that
// ended it (nil when the stream ended after its result).
func (s *streamer) events(c llmworker.Call) ([]llmworker.Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	var events []llmworker.Event
	for event, err := range s.client.CallToolStream(ctx, c.Name, c.Input, llmworker.WithCallID(c.ID)) {
		if err != nil {
			return events, err
		}
		events = append(events, event)
	}
	return events, nil
}

// kind names what an event carries.
func kind(event llmworker.Event) string {
	switch {
	case event.Progress != nil:
		return "progress"
	case event.Result != nil:
		return "result"
	case event.Chunk != "":
		return "output_chunk"
	default:
		return fmt.Sprintf("unset(%v)", event)
	}
}

func kinds(events []llmworker.Event) []string {
	names := make([]string, 0, len(events))
	for _, event := range events {
		names = append(names, kind(event))
	}
	return names
}

// countdown streams countdown n=3: chunks "3\n", "2\n", "1\n" in order (possibly merged),
// progress strictly increasing with total 3 and the message of its step, never ahead of the
// chunks of the steps before it, the last progress 3, and the result, once and last.
func (s *streamer) countdown() error {
	const n, want = 3, "3\n2\n1\n"
	events, err := s.events(call("go-countdown", "countdown", `{"n": 3, "delay": 0.06}`))
	if err != nil {
		return fmt.Errorf("after %d events %v: %w", len(events), kinds(events), err)
	}
	var text strings.Builder
	var last *pb.ToolProgress
	results := 0
	for i, event := range events {
		switch kind(event) {
		case "output_chunk":
			text.WriteString(event.Chunk)
			if !strings.HasPrefix(want, text.String()) {
				return fmt.Errorf("event %d: chunks so far %q are not a prefix of %q", i, text.String(), want)
			}
		case "progress":
			p := event.Progress
			if p.Total == nil || *p.Total != n {
				return fmt.Errorf("event %d: progress %v without total %d", i, p, n)
			}
			if last != nil && p.Progress <= last.Progress {
				return fmt.Errorf("event %d: progress %v after %v, want increasing", i, p.Progress, last.Progress)
			}
			step := int(p.Progress)
			if float64(step) != p.Progress || step < 1 || step > n {
				return fmt.Errorf("event %d: progress %v, want a step 1..%d", i, p.Progress, n)
			}
			if message := fmt.Sprintf("%d to go", n-step+1); p.Message != message {
				return fmt.Errorf("event %d: progress %v message %q, want %q", i, p.Progress, p.Message, message)
			}
			// Step k is reported after the chunks of steps 1..k-1 were yielded.
			if lines := strings.Count(text.String(), "\n"); lines < step-1 {
				return fmt.Errorf("event %d: progress %d before the chunks of the steps before it (%d lines so far)",
					i, step, lines)
			}
			last = p
		case "result":
			results++
			if i != len(events)-1 {
				return fmt.Errorf("event %d: result before the events %v", i, kinds(events[i+1:]))
			}
			if event.Result.Output != want {
				return fmt.Errorf("result output %q, want %q", event.Result.Output, want)
			}
		default:
			return fmt.Errorf("event %d: no event set: %v", i, event)
		}
	}
	switch {
	case results != 1:
		return fmt.Errorf("%d results in %v, want one, last", results, kinds(events))
	case text.String() != want:
		return fmt.Errorf("chunks joined %q, want %q (events %v)", text.String(), want, kinds(events))
	case last == nil:
		return fmt.Errorf("no progress event in %v", kinds(events))
	case last.Progress != n:
		return fmt.Errorf("last progress %v, want %d (the last report always arrives)", last.Progress, n)
	}
	return nil
}

// plainTool streams echo, which does not stream: one event, the result.
func (s *streamer) plainTool() error {
	events, err := s.events(call("", "echo", `{"text":"x"}`))
	if err != nil {
		return fmt.Errorf("after %d events %v: %w", len(events), kinds(events), err)
	}
	if len(events) != 1 || events[0].Result == nil || events[0].Result.Output != "x" {
		return fmt.Errorf("events %v, want one result with output \"x\"", events)
	}
	return nil
}

// failures: an unknown tool and invalid arguments end the stream, before any event, with the
// code, ErrorInfo and message CallTool fails with.
func (s *streamer) failures() error {
	cases := []struct {
		what   string
		call   llmworker.Call
		code   codes.Code
		reason string
	}{
		{"unknown tool", call("", "no_such_tool", "{}"), codes.NotFound, "TOOL_NOT_FOUND"},
		{"countdown n=0", call("", "countdown", `{"n": 0}`), codes.InvalidArgument, "TOOL_INVALID_ARGUMENT"},
	}
	for _, c := range cases {
		events, err := s.events(c.call)
		if len(events) != 0 {
			return fmt.Errorf("%s: events %v before the failure, want none", c.what, kinds(events))
		}
		streamed, err := failure(err, c.code, c.reason)
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		_, unaryErr := s.client.CallTool(context.Background(), c.call.Name, c.call.Input)
		unary, err := failure(unaryErr, c.code, c.reason)
		if err != nil {
			return fmt.Errorf("%s: CallTool: %w", c.what, err)
		}
		if streamed.Message != unary.Message || !maps.Equal(streamed.Metadata, unary.Metadata) {
			return fmt.Errorf("%s: stream %q %v, CallTool %q %v", c.what,
				streamed.Message, streamed.Metadata, unary.Message, unary.Metadata)
		}
	}
	return nil
}

// cancellation starts a long countdown, reads two events, cancels the stream's context and waits
// for the note the tool writes when it is cancelled.
func (s *streamer) cancellation() error {
	callID := fmt.Sprintf("go-cancel-%d", os.Getpid())
	note := json.RawMessage(fmt.Sprintf(`{"key": "countdown.%s"}`, callID))
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	received, cancelled := 0, false
	for _, err := range s.client.CallToolStream(ctx, "countdown", json.RawMessage(`{"n": 10000, "delay": 0.01}`),
		llmworker.WithCallID(callID)) {
		if received < 2 {
			if err != nil {
				return fmt.Errorf("event %d: %w", received, err)
			}
			if received++; received == 2 {
				_, err := s.client.CallTool(context.Background(), "kv_get", note)
				if err := rpcError(err, codes.Unknown, "TOOL_EXECUTION_FAILED"); err != nil {
					return fmt.Errorf("kv_get countdown.%s while the countdown runs: %w", callID, err)
				}
				cancel()
			}
			continue
		}
		if err == nil {
			continue // events already on their way
		}
		var failed *llmworker.Failure
		if !errors.As(err, &failed) || failed.Code != codes.Canceled {
			return fmt.Errorf("the cancelled stream ended with %#v, want CANCELED", err)
		}
		cancelled = true
		break
	}
	if !cancelled {
		return fmt.Errorf("the stream ended after %d events without the cancellation's CANCELED", received)
	}
	deadline := time.Now().Add(cancelNoteWait)
	for {
		reply, err := s.client.CallTool(context.Background(), "kv_get", note)
		if err == nil {
			if reply.Output != "cancelled" {
				return fmt.Errorf("countdown.%s is %q, want \"cancelled\"", callID, reply.Output)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("countdown.%s not set %v after the cancel: %w", callID, cancelNoteWait, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
