// Package provider serves tools written in Go to llmworker registries: define each tool as a
// function of a typed argument struct (its JSON Schema comes from the struct and its tags),
// serve them, and register them with one or many registries, which call them over gRPC.
//
//	type Reverse struct {
//		Text string `json:"text" jsonschema:"description=the text to reverse"`
//	}
//	tools, err := provider.New(provider.Tool("reverse", "Reverse a text",
//		func(ctx context.Context, in Reverse) (string, error) { return reversed(in.Text), nil }))
//	…
//	go tools.Serve(listener)
//	tools.Register(ctx, "unix:///run/llmworker.sock", provider.WithToken(token))
package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Definition is one tool: what the registry is told (its ToolDefinition) and how to run it.
type Definition struct {
	definition *pb.ToolDefinition
	run        func(ctx context.Context, input []byte) (*pb.CallToolResponse, error)
	err        error
}

// Name is the tool's name.
func (d Definition) Name() string { return d.definition.GetName() }

// Message is the ToolDefinition the registry is told.
func (d Definition) Message() *pb.ToolDefinition { return d.definition }

// ToolOption sets more of a tool's definition.
type ToolOption func(*pb.ToolDefinition)

// Title is a name for people.
func Title(title string) ToolOption { return func(d *pb.ToolDefinition) { d.Title = title } }

// ReadOnly says the tool changes nothing (a hint; callers may retry it).
func ReadOnly() ToolOption {
	return func(d *pb.ToolDefinition) { annotations(d).ReadOnlyHint = ptr(true) }
}

// Destructive says the tool may destroy or overwrite data (a hint).
func Destructive() ToolOption {
	return func(d *pb.ToolDefinition) { annotations(d).DestructiveHint = ptr(true) }
}

// Idempotent says calling it again with the same input has no further effect (a hint).
func Idempotent() ToolOption {
	return func(d *pb.ToolDefinition) { annotations(d).IdempotentHint = ptr(true) }
}

// RequiresApproval makes a batch pause before the tool runs until a person approves.
func RequiresApproval() ToolOption {
	return func(d *pb.ToolDefinition) { d.RequiresApproval = true }
}

func annotations(d *pb.ToolDefinition) *pb.ToolAnnotations {
	if d.Annotations == nil {
		d.Annotations = &pb.ToolAnnotations{}
	}
	return d.Annotations
}

func ptr[T any](value T) *T { return &value }

// Tool defines the tool name: run gets the model's arguments decoded into In (a struct whose
// fields and `json`/`jsonschema` tags make the input schema; unknown fields are refused).
// An Out of string is the result's text; any other Out is its structured result (JSON, with
// an output schema from Out's type), and its text too.
func Tool[In, Out any](name, description string, run func(context.Context, In) (Out, error), options ...ToolOption) Definition {
	reflector := jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	definition := &pb.ToolDefinition{Name: name, Description: description}
	inputSchema := reflector.Reflect(new(In))
	check := inputCheck{required: inputSchema.Required, closed: inputSchema.AdditionalProperties == jsonschema.FalseSchema,
		embedded: embeddedNames(reflect.TypeFor[In](), map[string]bool{}, map[reflect.Type]bool{})}
	if inputSchema.Properties != nil {
		for pair := inputSchema.Properties.Oldest(); pair != nil; pair = pair.Next() {
			check.known = append(check.known, pair.Key)
		}
	}
	input, err := schemaJSON(inputSchema)
	if err != nil {
		return Definition{err: fmt.Errorf("provider: the input schema of %s: %w", name, err)}
	}
	definition.InputSchemaJson = input
	_, text := any(*new(Out)).(string)
	if !text {
		schema := reflector.Reflect(new(Out))
		if schema.Type != "object" {
			return Definition{err: fmt.Errorf("provider: tool %s returns %T: a structured result is a JSON object, so return a struct or a map (or a string for text)", name, *new(Out))}
		}
		output, err := schemaJSON(schema)
		if err != nil {
			return Definition{err: fmt.Errorf("provider: the output schema of %s: %w", name, err)}
		}
		definition.OutputSchemaJson = output
	}
	for _, option := range options {
		option(definition)
	}
	call := func(ctx context.Context, raw []byte) (*pb.CallToolResponse, error) {
		var arguments In
		if err := check.decode(raw, &arguments); err != nil {
			return nil, toolError(name, err)
		}
		out, err := run(ctx, arguments)
		if err != nil {
			if ctx.Err() != nil { // the call was cancelled or timed out, not the tool's failure
				return nil, status.FromContextError(ctx.Err()).Err()
			}
			return nil, toolError(name, err)
		}
		if s, ok := any(out).(string); ok {
			return &pb.CallToolResponse{Output: s}, nil
		}
		structured, err := json.Marshal(out)
		if err != nil || !strings.HasPrefix(string(structured), "{") {
			return nil, toolError(name, fmt.Errorf("the result is not a JSON object (%s, %v)", structured, err))
		}
		return &pb.CallToolResponse{Output: string(structured), StructuredOutputJson: string(structured)}, nil
	}
	if !toolName.MatchString(name) {
		return Definition{err: fmt.Errorf("provider: tool name %q: use 1-64 of A-Z a-z 0-9 _ -", name)}
	}
	return Definition{definition: definition, run: call}
}

// inputCheck holds the model's arguments to the input schema before they are decoded, and
// words each mistake as the server's own tools do ("text: Field required", "extra: unknown
// field; remove it"), naming the field, so a model corrects it the same way for every tool.
type inputCheck struct {
	required, known []string
	closed          bool            // additionalProperties false: unknown fields are refused
	embedded        map[string]bool // Go names of embedded structs, not in the JSON paths
}

// maxProblems is how many problems a refusal lists before "(+N more problems)".
const maxProblems = 5

// decode checks raw (a JSON object with every required field and, closed, no other) and
// decodes it into arguments; every failure is an InvalidArgument naming the field.
func (c inputCheck) decode(raw []byte, arguments any) error {
	var value any
	if err := json.Unmarshal(raw, &value); err != nil {
		return InvalidArgument(fmt.Sprintf("input is not valid JSON (%v); send one JSON object", err))
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return InvalidArgument("arguments must be a JSON object, got " + jsonKind(value))
	}
	var problems []string
	for _, name := range c.required {
		if given, ok := fields[name]; !ok || string(bytes.TrimSpace(given)) == "null" {
			problems = append(problems, name+": Field required")
		}
	}
	if c.closed {
		var extra []string
		for name := range fields {
			if !slices.Contains(c.known, name) {
				extra = append(extra, name)
			}
		}
		slices.Sort(extra)
		for _, name := range extra {
			problems = append(problems, name+": unknown field; remove it")
		}
	}
	if len(problems) > 0 {
		return InvalidArgument(listed(problems))
	}
	decoder := json.NewDecoder(bytes.NewReader(raw))
	if c.closed {
		decoder.DisallowUnknownFields() // in nested objects too
	}
	err := decoder.Decode(arguments)
	var mistyped *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &mistyped):
		return InvalidArgument(c.path(mistyped.Field) + ": " + mismatch(mistyped))
	case strings.HasPrefix(err.Error(), `json: unknown field "`):
		name := strings.TrimSuffix(strings.TrimPrefix(err.Error(), `json: unknown field "`), `"`)
		return InvalidArgument(name + ": unknown field; remove it")
	}
	return InvalidArgument(strings.TrimPrefix(err.Error(), "json: "))
}

// path is a decoding error's field path without the Go names of embedded structs ("input"
// for the arguments themselves).
func (c inputCheck) path(field string) string {
	var kept []string
	for _, part := range strings.Split(field, ".") {
		if part != "" && !c.embedded[part] {
			kept = append(kept, part)
		}
	}
	if len(kept) == 0 {
		return "input"
	}
	return strings.Join(kept, ".")
}

// mismatch says what a value of the wrong type should have been.
func mismatch(e *json.UnmarshalTypeError) string {
	want := goKind(e.Type.Kind().String())
	if want == "integer" && strings.HasPrefix(e.Value, "number ") {
		return fmt.Sprintf("Input should be a valid %s (got %s: not a whole number, or out of range for %s)",
			want, strings.TrimPrefix(e.Value, "number "), e.Type)
	}
	return fmt.Sprintf("Input should be a valid %s (got %s)", want, article(e.Value))
}

// article is a JSON kind with its article: "a string", "an array", "null".
func article(kind string) string {
	switch kind {
	case "array", "object":
		return "an " + kind
	case "null":
		return kind
	}
	return "a " + kind
}

// listed joins problems with "; ", listing maxProblems at most.
func listed(problems []string) string {
	if len(problems) <= maxProblems {
		return strings.Join(problems, "; ")
	}
	return fmt.Sprintf("%s (+%d more problems)", strings.Join(problems[:maxProblems], "; "), len(problems)-maxProblems)
}

// embeddedNames are the Go names of the structs embedded in t, at any depth.
func embeddedNames(t reflect.Type, names map[string]bool, seen map[reflect.Type]bool) map[string]bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return names
	}
	seen[t] = true
	for field := range t.Fields() {
		if field.Anonymous {
			names[field.Name] = true
		}
		embeddedNames(field.Type, names, seen)
	}
	return names
}

// jsonKind names a decoded JSON value: an array, a string…
func jsonKind(value any) string {
	switch value.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "an object"
}

// goKind names a Go kind as JSON does (int64: integer, struct: object…).
func goKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "integer"
	case strings.HasPrefix(kind, "float"):
		return "number"
	case kind == "bool":
		return "boolean"
	case kind == "slice", kind == "array":
		return "array"
	case kind == "struct", kind == "map":
		return "object"
	}
	return kind
}

// schemaJSON is schema without the keys that name a dialect or a document ($schema, $id).
func schemaJSON(schema *jsonschema.Schema) (string, error) {
	schema.Version, schema.ID = "", ""
	text, err := json.Marshal(schema)
	return string(text), err
}

// invalidArgument is the error of InvalidArgument.
type invalidArgument struct{ message string }

func (e invalidArgument) Error() string { return e.message }

// InvalidArgument is an error a tool returns when the model's arguments are wrong: the
// caller gets TOOL_INVALID_ARGUMENT with message, for the model to correct. Any other error
// is TOOL_EXECUTION_FAILED.
func InvalidArgument(message string) error { return invalidArgument{message} }

// toolError is err as the status llmworker's servers send for a tool's error, so the
// registry rebuilds the same failure for its callers.
func toolError(tool string, err error) error {
	code, reason, kind := codes.Unknown, "TOOL_EXECUTION_FAILED", "Execution failed"
	var invalid invalidArgument
	if errors.As(err, &invalid) {
		code, reason, kind = codes.InvalidArgument, "TOOL_INVALID_ARGUMENT", "Invalid argument"
	}
	message := err.Error()
	st, detailErr := status.New(code, "Tool execution failed: "+kind+": "+message).WithDetails(
		&errdetails.ErrorInfo{Reason: reason, Domain: "llmworker",
			Metadata: map[string]string{"tool": tool, "tool_error": message}})
	if detailErr != nil {
		return status.Error(codes.Internal, detailErr.Error())
	}
	return st.Err()
}
