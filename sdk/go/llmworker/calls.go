package llmworker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"

	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// Result is a call's output: the text the model reads, the structured result (JSON; nil
// when the tool has none) and the attachments (images, audio, resources).
type Result struct {
	Output      string
	Structured  json.RawMessage
	Attachments []*pb.Attachment
}

func resultOf(response *pb.CallToolResponse) *Result {
	result := &Result{Output: response.GetOutput(), Attachments: response.GetAttachments()}
	if text := response.GetStructuredOutputJson(); text != "" {
		result.Structured = json.RawMessage(text)
	}
	return result
}

// CallOption sets what a call carries beside its input.
type CallOption func(*pb.CallToolRequest)

// WithCallID names the call (the server's logs, a tool's current call, _meta of an MCP hop).
func WithCallID(id string) CallOption { return func(r *pb.CallToolRequest) { r.CallId = id } }

// WithMetadata gives the call metadata its tool and hooks can read.
func WithMetadata(values map[string]string) CallOption {
	return func(r *pb.CallToolRequest) { r.Metadata = values }
}

// request builds a CallToolRequest: input is marshalled to JSON, unless it already is JSON
// (json.RawMessage or []byte).
func request(name string, input any, options []CallOption) (*pb.CallToolRequest, error) {
	var text []byte
	switch given := input.(type) {
	case json.RawMessage:
		text = given
	case []byte:
		text = given
	case nil:
		text = []byte("{}")
	default:
		var err error
		if text, err = json.Marshal(given); err != nil {
			return nil, fmt.Errorf("llmworker: the input of %s: %w", name, err)
		}
	}
	call := &pb.CallToolRequest{Name: name, InputJson: string(text)}
	for _, option := range options {
		option(call)
	}
	return call, nil
}

// CallTool runs the tool name with input (marshalled to a JSON object) and returns its
// result; a failure is the typed error of its reason (ToolNotFound, ToolInvalidArgument…).
func (c *Client) CallTool(ctx context.Context, name string, input any, options ...CallOption) (*Result, error) {
	call, err := request(name, input, options)
	if err != nil {
		return nil, err
	}
	response, err := c.tools.CallTool(ctx, call)
	if err != nil {
		return nil, FromError(err)
	}
	return resultOf(response), nil
}

// GetTool gives the definition of the tool name: ToolNotFound when there is none,
// ToolForbidden when this client's token may not use it.
func (c *Client) GetTool(ctx context.Context, name string) (*pb.ToolDefinition, error) {
	response, err := c.tools.GetTool(ctx, &pb.GetToolRequest{Name: name})
	if err != nil {
		return nil, FromError(err)
	}
	return response.GetDefinition(), nil
}

// Event is one event of a streamed call: progress, a chunk of output, or (last) the result.
type Event struct {
	Progress *pb.ToolProgress
	Chunk    string
	Result   *Result
}

// CallToolStream runs the tool name as CallToolStream: its progress and output chunks as
// they come, then its result. Stopping the loop early cancels the call.
//
//	for event, err := range client.CallToolStream(ctx, "countdown", input) { … }
func (c *Client) CallToolStream(ctx context.Context, name string, input any, options ...CallOption) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		call, err := request(name, input, options)
		if err != nil {
			yield(Event{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := c.tools.CallToolStream(ctx, call)
		if err != nil {
			yield(Event{}, FromError(err))
			return
		}
		for {
			received, err := stream.Recv()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(Event{}, FromError(err))
				return
			}
			var event Event
			switch {
			case received.GetProgress() != nil:
				event.Progress = received.GetProgress()
			case received.GetOutputChunk() != nil:
				event.Chunk = received.GetOutputChunk().GetText()
			case received.GetResult() != nil:
				event.Result = resultOf(received.GetResult())
			default:
				continue // an event kind newer than this package
			}
			if !yield(event, nil) {
				return
			}
		}
	}
}

// Definitions is the server's tool set: its definitions sorted by name and their
// fingerprint (it changes exactly when the set does).
type Definitions struct {
	Tools       []*pb.ToolDefinition
	Fingerprint string
}

// ListDefinitions gives the tools this client may use.
func (c *Client) ListDefinitions(ctx context.Context) (*Definitions, error) {
	response, err := c.tools.ListDefinitionsSorted(ctx, &pb.ListDefinitionsSortedRequest{})
	if err != nil {
		return nil, FromError(err)
	}
	return &Definitions{response.GetDefinitions(), response.GetFingerprint()}, nil
}

// ListOption sets how ListDefinitionsIn renders the tools.
type ListOption func(*pb.ListDefinitionsSortedRequest)

// WithCacheControl marks the last tool {"cache_control": {"type": "ephemeral"}} in the
// Anthropic formats, so the provider caches the tools as a prompt prefix.
func WithCacheControl() ListOption {
	return func(r *pb.ListDefinitionsSortedRequest) { r.AnthropicCacheControl = true }
}

// ListDefinitionsIn gives the same tools as a provider's request field takes them (the JSON
// array for "tools"), e.g. pb.DefinitionFormat_DEFINITION_FORMAT_ANTHROPIC.
func (c *Client) ListDefinitionsIn(ctx context.Context, format pb.DefinitionFormat, options ...ListOption) (json.RawMessage, error) {
	request := &pb.ListDefinitionsSortedRequest{Format: format}
	for _, option := range options {
		option(request)
	}
	response, err := c.tools.ListDefinitionsSorted(ctx, request)
	if err != nil {
		return nil, FromError(err)
	}
	return json.RawMessage(response.GetDefinitionsJson()), nil
}

// WatchDefinitions yields the tool set now and again after every change, until ctx ends or
// the loop stops (the server ends watches it drains; watch again then).
func (c *Client) WatchDefinitions(ctx context.Context) iter.Seq2[*Definitions, error] {
	return func(yield func(*Definitions, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stream, err := c.tools.WatchDefinitions(ctx, &pb.WatchDefinitionsRequest{})
		if err != nil {
			yield(nil, FromError(err))
			return
		}
		for {
			response, err := stream.Recv()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(nil, FromError(err))
				return
			}
			if response.GetUnchanged() {
				continue
			}
			if !yield(&Definitions{response.GetDefinitions(), response.GetFingerprint()}, nil) {
				return
			}
		}
	}
}

// Found is a tool SearchTools found, with its score (higher is better, within one search).
type Found struct {
	Tool  *pb.ToolDefinition
	Score float64
}

// SearchTools ranks the tools this client may use against a few words ("delete a key")
// and gives the best limit of them (1-100), best first.
func (c *Client) SearchTools(ctx context.Context, query string, limit int) ([]Found, error) {
	response, err := c.tools.SearchTools(ctx, &pb.SearchToolsRequest{Query: query, Limit: int32(min(max(limit, -1), 1<<31-1))})
	if err != nil {
		return nil, FromError(err)
	}
	found := make([]Found, len(response.GetDefinitions()))
	scores := response.GetScores()
	for i, definition := range response.GetDefinitions() {
		found[i] = Found{Tool: definition}
		if i < len(scores) {
			found[i].Score = scores[i]
		}
	}
	return found, nil
}
