package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "llmworker/interop/gen/llmworker/v1"
)

// cancelNoteWait is how long the cancellation check waits for the countdown's note; a
// countdown that was not cancelled runs for 100 s and more before it could end.
const cancelNoteWait = 10 * time.Second

// streamer runs the CallToolStream checks on the demo tools.
type streamer struct {
	client pb.ToolServiceClient
}

func runStream(target string) error {
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(withTimeout))
	if err != nil {
		return fmt.Errorf("stream connect: %w", err)
	}
	defer conn.Close()
	s := &streamer{client: pb.NewToolServiceClient(conn)}
	checks := []struct {
		name, ok string
		run      func() error
	}{
		{"countdown", "countdown: progress and chunks in order, then the result", s.countdown},
		{"plain tool", "a tool that does not stream sends its result only", s.plainTool},
		{"errors", "errors: CallTool's status and ErrorInfo", s.failures},
		{"cancel", "cancelling the stream cancels the tool", s.cancellation},
	}
	for _, check := range checks {
		if err := check.run(); err != nil {
			return fmt.Errorf("stream %s: %w", check.name, err)
		}
		fmt.Println("OK stream", check.ok)
	}
	return nil
}

// events reads a whole stream: its events, and the error that ended it (nil at io.EOF).
func (s *streamer) events(request *pb.CallToolRequest) ([]*pb.CallToolEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	stream, err := s.client.CallToolStream(ctx, request)
	if err != nil {
		return nil, err
	}
	var events []*pb.CallToolEvent
	for {
		event, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return events, nil
		}
		if err != nil {
			return events, err
		}
		events = append(events, event)
	}
}

// kind names the set member of an event's oneof.
func kind(event *pb.CallToolEvent) string {
	switch event.Event.(type) {
	case *pb.CallToolEvent_Progress:
		return "progress"
	case *pb.CallToolEvent_OutputChunk:
		return "output_chunk"
	case *pb.CallToolEvent_Result:
		return "result"
	default:
		return fmt.Sprintf("unset(%v)", event)
	}
}

func kinds(events []*pb.CallToolEvent) []string {
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
		switch e := event.Event.(type) {
		case *pb.CallToolEvent_OutputChunk:
			text.WriteString(e.OutputChunk.Text)
			if !strings.HasPrefix(want, text.String()) {
				return fmt.Errorf("event %d: chunks so far %q are not a prefix of %q", i, text.String(), want)
			}
		case *pb.CallToolEvent_Progress:
			p := e.Progress
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
		case *pb.CallToolEvent_Result:
			results++
			if i != len(events)-1 {
				return fmt.Errorf("event %d: result before the events %v", i, kinds(events[i+1:]))
			}
			if e.Result.Output != want {
				return fmt.Errorf("result output %q, want %q", e.Result.Output, want)
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
	if len(events) != 1 || events[0].GetResult() == nil || events[0].GetResult().Output != "x" {
		return fmt.Errorf("events %v, want one result with output \"x\"", events)
	}
	return nil
}

// failures: an unknown tool and invalid arguments end the stream, before any event, with the
// code, ErrorInfo and message CallTool fails with.
func (s *streamer) failures() error {
	cases := []struct {
		what    string
		request *pb.CallToolRequest
		code    codes.Code
		reason  string
	}{
		{"unknown tool", call("", "no_such_tool", "{}"), codes.NotFound, "TOOL_NOT_FOUND"},
		{"countdown n=0", call("", "countdown", `{"n": 0}`), codes.InvalidArgument, "TOOL_INVALID_ARGUMENT"},
	}
	for _, c := range cases {
		events, err := s.events(c.request)
		if len(events) != 0 {
			return fmt.Errorf("%s: events %v before the failure, want none", c.what, kinds(events))
		}
		if err := rpcError(err, c.code, c.reason); err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		_, unaryErr := s.client.CallTool(context.Background(), c.request)
		streamed, unary := status.Convert(err), status.Convert(unaryErr)
		if streamed.Code() != unary.Code() || streamed.Message() != unary.Message() {
			return fmt.Errorf("%s: stream %v %q, CallTool %v %q", c.what,
				streamed.Code(), streamed.Message(), unary.Code(), unary.Message())
		}
		got, want := errorInfo(streamed), errorInfo(unary)
		if got == nil || want == nil || got.Domain != want.Domain || got.Reason != want.Reason ||
			!maps.Equal(got.Metadata, want.Metadata) {
			return fmt.Errorf("%s: stream ErrorInfo %v, CallTool ErrorInfo %v", c.what, got, want)
		}
	}
	return nil
}

// errorInfo is a status's ErrorInfo detail, or nil.
func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// cancellation starts a long countdown, reads two events, cancels the stream's context and waits
// for the note the tool writes when it is cancelled.
func (s *streamer) cancellation() error {
	callID := fmt.Sprintf("go-cancel-%d", os.Getpid())
	note := call("", "kv_get", fmt.Sprintf(`{"key": "countdown.%s"}`, callID))
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	stream, err := s.client.CallToolStream(ctx,
		call(callID, "countdown", `{"n": 10000, "delay": 0.01}`))
	if err != nil {
		return err
	}
	for i := range 2 {
		if _, err := stream.Recv(); err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
	}
	_, err = s.client.CallTool(context.Background(), note)
	if err := rpcError(err, codes.Unknown, "TOOL_EXECUTION_FAILED"); err != nil {
		return fmt.Errorf("kv_get countdown.%s while the countdown runs: %w", callID, err)
	}
	cancel()
	for {
		_, err := stream.Recv()
		if err == nil {
			continue // events already on their way
		}
		if status.Code(err) != codes.Canceled {
			return fmt.Errorf("the cancelled stream ended with %v, want CANCELED", err)
		}
		break
	}
	deadline := time.Now().Add(cancelNoteWait)
	for {
		reply, err := s.client.CallTool(context.Background(), note)
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
