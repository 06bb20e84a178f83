package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/llmworker/llmworker/sdk/go/llmworker"
	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
)

// watchWait is how long a watch may take to deliver a message: its first one, or the one a
// registration causes.
const watchWait = 10 * time.Second

// watchQuiet is how long a watch must stay silent after the message of the last change.
const watchQuiet = 300 * time.Millisecond

// watchProvider is the provider_target the watch check registers its tool with (and
// unregisters it with); the tool is never called.
const watchProvider = "127.0.0.1:1"

// received is one outcome of a watch's Recv: a message, or the error that ended the watch.
type received struct {
	message *pb.ListDefinitionsSortedResponse
	err     error
}

// watch is one open WatchDefinitions stream, read by a goroutine into messages (closed after
// the error that ended the stream).
type watch struct {
	name     string
	cancel   context.CancelFunc
	messages chan received
}

// next is the watch's next message, within watchWait.
func (w *watch) next() (*pb.ListDefinitionsSortedResponse, error) {
	select {
	case r, ok := <-w.messages:
		switch {
		case !ok:
			return nil, fmt.Errorf("%s watch: already ended", w.name)
		case r.err != nil:
			return nil, fmt.Errorf("%s watch ended: %w", w.name, r.err)
		}
		return r.message, nil
	case <-time.After(watchWait):
		return nil, fmt.Errorf("%s watch: no message within %v", w.name, watchWait)
	}
}

// watcher runs the WatchDefinitions checks: four watches (plain, the SDK's iterator, with a
// known fingerprint, in OpenAI Chat format) that a RegisterTool through the internal
// registry, then an UnregisterTool of the same tool, must reach.
type watcher struct {
	client   *llmworker.Client
	registry pb.ToolRegistryClient
	token    string
	watches  []*watch // plain, the SDK's, known fingerprint, openai_chat
	// What the first messages said, for the registration check (and the departure check,
	// which returns to these names).
	names       []string
	fingerprint string
	chatPrint   string
	// The tool the registration check registered and the fingerprints it led to, for the
	// departure check.
	tool          string
	toolPrint     string
	toolChatPrint string
}

func runWatch(target, registryTarget, token string) error {
	client, err := llmworker.Dial(target, llmworker.WithDialOptions(grpc.WithUnaryInterceptor(withTimeout)))
	if err != nil {
		return fmt.Errorf("watch connect: %w", err)
	}
	defer client.Close()
	internal, err := grpc.NewClient(registryTarget,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(withTimeout))
	if err != nil {
		return fmt.Errorf("watch connect to registry: %w", err)
	}
	defer internal.Close()
	w := &watcher{client: client, registry: pb.NewToolRegistryClient(internal), token: token}
	defer func() {
		for _, open := range w.watches {
			open.cancel()
		}
	}()
	return runChecks("watch", []check{
		{"first", "the first message is the current state, fingerprinted as ListDefinitionsSorted", w.first},
		{"unchanged", "unchanged for a known fingerprint", w.unchanged},
		{"openai_chat", "openai_chat definitions_json", w.openAIChat},
		{"registration", "a registration reaches every watch", w.registration},
		{"departure", "a tool that leaves reaches every watch", w.departure},
		{"cancel", "cancelling ends the watches", w.cancellation},
	})
}

// open starts a watch of the raw stub (for a known fingerprint or a format, which the SDK's
// WatchDefinitions does not take) and the goroutine reading it; the stream lives until
// cancelled (or for a minute at most).
func (w *watcher) open(name string, request *pb.WatchDefinitionsRequest) (*watch, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	stream, err := w.client.Service().WatchDefinitions(ctx, request)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("open the %s watch: %w", name, err)
	}
	opened := &watch{name: name, cancel: cancel, messages: make(chan received, 16)}
	go func() {
		defer close(opened.messages)
		for {
			message, err := stream.Recv()
			opened.messages <- received{message, err}
			if err != nil {
				return
			}
		}
	}()
	w.watches = append(w.watches, opened)
	return opened, nil
}

// openSDK starts a plain watch with the SDK's WatchDefinitions iterator, its states as the
// stub's messages, and the goroutine reading it.
func (w *watcher) openSDK(name string) *watch {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	opened := &watch{name: name, cancel: cancel, messages: make(chan received, 16)}
	go func() {
		defer close(opened.messages)
		for state, err := range w.client.WatchDefinitions(ctx) {
			if err != nil {
				opened.messages <- received{nil, err}
				return
			}
			opened.messages <- received{&pb.ListDefinitionsSortedResponse{Definitions: state.Tools, Fingerprint: state.Fingerprint}, nil}
		}
		opened.messages <- received{nil, errors.New("the SDK's watch ended without an error")}
	}()
	w.watches = append(w.watches, opened)
	return opened
}

func names(definitions []*pb.ToolDefinition) []string {
	listed := make([]string, 0, len(definitions))
	for _, definition := range definitions {
		listed = append(listed, definition.Name)
	}
	return listed
}

// sameListing: a watch's full message is the unary ListDefinitionsSorted answer, field by field.
func sameListing(got, want *pb.ListDefinitionsSortedResponse) error {
	if got.Unchanged || got.DefinitionsJson != "" {
		return fmt.Errorf("unchanged=%v definitions_json %d bytes, want a full plain listing",
			got.Unchanged, len(got.DefinitionsJson))
	}
	if !slices.IsSorted(names(got.Definitions)) {
		return fmt.Errorf("names %v are not sorted", names(got.Definitions))
	}
	if got.Fingerprint == "" || got.Fingerprint != want.Fingerprint {
		return fmt.Errorf("fingerprint %q, ListDefinitionsSorted says %q", got.Fingerprint, want.Fingerprint)
	}
	if !proto.Equal(got, want) {
		return fmt.Errorf("definitions %v differ from ListDefinitionsSorted's %v",
			names(got.Definitions), names(want.Definitions))
	}
	return nil
}

// chatNames checks a formatted message: definitions_json is a JSON array of
// {"type":"function","function":{"name",...}} entries, sorted by name, whose SHA-256 is the
// fingerprint; it returns the names.
func chatNames(message *pb.ListDefinitionsSortedResponse) ([]string, error) {
	if message.Unchanged || len(message.Definitions) != 0 {
		return nil, fmt.Errorf("unchanged=%v definitions=%d, want definitions_json only",
			message.Unchanged, len(message.Definitions))
	}
	var entries []jsonObject
	if err := json.Unmarshal([]byte(message.DefinitionsJson), &entries); err != nil || entries == nil {
		return nil, fmt.Errorf("definitions_json %.80q is not a JSON array of objects: %v", message.DefinitionsJson, err)
	}
	listed := make([]string, 0, len(entries))
	for i, entry := range entries {
		var kind string
		var function struct {
			Name       *string         `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		}
		if json.Unmarshal(entry["type"], &kind) != nil || kind != "function" ||
			json.Unmarshal(entry["function"], &function) != nil || function.Name == nil || function.Parameters == nil {
			return nil, fmt.Errorf("entry %d is not {\"type\":\"function\",\"function\":{\"name\",\"parameters\",...}}: %v", i, entry)
		}
		listed = append(listed, *function.Name)
	}
	if !slices.IsSorted(listed) {
		return nil, fmt.Errorf("names %v are not sorted", listed)
	}
	sum := sha256.Sum256([]byte(message.DefinitionsJson))
	if message.Fingerprint != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("fingerprint %q is not the SHA-256 of definitions_json", message.Fingerprint)
	}
	return listed, nil
}

func (w *watcher) listing(request *pb.ListDefinitionsSortedRequest) (*pb.ListDefinitionsSortedResponse, error) {
	listed, err := w.client.Service().ListDefinitionsSorted(context.Background(), request)
	if err != nil {
		return nil, fmt.Errorf("ListDefinitionsSorted: %w", err)
	}
	return listed, nil
}

// first: a plain watch's first message, and the SDK watch's first state, are
// ListDefinitionsSorted's answer.
func (w *watcher) first() error {
	plain, err := w.open("plain", &pb.WatchDefinitionsRequest{})
	if err != nil {
		return err
	}
	sdk := w.openSDK("SDK")
	message, err := plain.next()
	if err != nil {
		return err
	}
	want, err := w.listing(&pb.ListDefinitionsSortedRequest{})
	if err != nil {
		return err
	}
	if err := sameListing(message, want); err != nil {
		return err
	}
	state, err := sdk.next()
	if err != nil {
		return err
	}
	if err := sameListing(state, want); err != nil {
		return fmt.Errorf("the SDK's watch: %w", err)
	}
	if len(message.Definitions) == 0 {
		return errors.New("no definitions, want the server's tools")
	}
	w.names, w.fingerprint = names(message.Definitions), message.Fingerprint
	return nil
}

// unchanged: a watch given the current fingerprint starts with `unchanged`.
func (w *watcher) unchanged() error {
	known, err := w.open("known-fingerprint", &pb.WatchDefinitionsRequest{KnownFingerprint: w.fingerprint})
	if err != nil {
		return err
	}
	message, err := known.next()
	if err != nil {
		return err
	}
	if !message.Unchanged || message.Fingerprint != w.fingerprint || len(message.Definitions) != 0 ||
		message.DefinitionsJson != "" {
		return fmt.Errorf("unchanged=%v fingerprint %q definitions=%d definitions_json %d bytes, want true, %q, 0, 0",
			message.Unchanged, message.Fingerprint, len(message.Definitions), len(message.DefinitionsJson), w.fingerprint)
	}
	return nil
}

var chatRequest = &pb.ListDefinitionsSortedRequest{Format: pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT}

// openAIChat: a watch in OpenAI Chat format starts with ListDefinitionsSorted's bytes.
func (w *watcher) openAIChat() error {
	chat, err := w.open("openai_chat", &pb.WatchDefinitionsRequest{Format: pb.DefinitionFormat_DEFINITION_FORMAT_OPENAI_CHAT})
	if err != nil {
		return err
	}
	message, err := chat.next()
	if err != nil {
		return err
	}
	listed, err := chatNames(message)
	if err != nil {
		return err
	}
	if !slices.Equal(listed, w.names) {
		return fmt.Errorf("names %v, the plain watch listed %v", listed, w.names)
	}
	want, err := w.listing(chatRequest)
	if err != nil {
		return err
	}
	if !proto.Equal(message, want) {
		return fmt.Errorf("fingerprint %q and %d bytes, ListDefinitionsSorted says %q and %d bytes",
			message.Fingerprint, len(message.DefinitionsJson), want.Fingerprint, len(want.DefinitionsJson))
	}
	w.chatPrint = message.Fingerprint
	return nil
}

// registration registers a tool through the internal ToolRegistry: every watch delivers the
// new state, then nothing more.
func (w *watcher) registration() error {
	name := fmt.Sprintf("go_watch_%d", os.Getpid())
	registered, err := w.registry.RegisterTool(w.authorised(), &pb.RegisterToolRequest{
		Definition: &pb.ToolDefinition{
			Name:            name,
			Description:     "A tool the Go watch check registers; never called.",
			InputSchemaJson: `{"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}`,
		},
		ProviderTarget: watchProvider,
	})
	if err != nil {
		return fmt.Errorf("register %s: %w", name, err)
	}
	if registered.Fingerprint == "" || registered.Fingerprint == w.fingerprint {
		return fmt.Errorf("RegisterTool fingerprint %q, want a new one (was %q)", registered.Fingerprint, w.fingerprint)
	}
	want, err := w.listing(&pb.ListDefinitionsSortedRequest{})
	if err != nil {
		return err
	}
	if want.Fingerprint != registered.Fingerprint {
		return fmt.Errorf("ListDefinitionsSorted fingerprint %q, RegisterTool said %q", want.Fingerprint, registered.Fingerprint)
	}
	wantNames := slices.Sorted(slices.Values(append(slices.Clone(w.names), name)))
	chatPrint, err := w.everyWatch("registering "+name, want, wantNames, w.chatPrint)
	if err != nil {
		return err
	}
	w.tool, w.toolPrint, w.toolChatPrint = name, registered.Fingerprint, chatPrint
	return nil
}

// departure unregisters the registration check's tool (same name, same provider_target):
// every watch delivers a state without it, then nothing more.
func (w *watcher) departure() error {
	removed, err := w.registry.UnregisterTool(w.authorised(), &pb.UnregisterToolRequest{
		Name:           w.tool,
		ProviderTarget: watchProvider,
	})
	if err != nil {
		return fmt.Errorf("unregister %s: %w", w.tool, err)
	}
	if removed.Fingerprint == "" || removed.Fingerprint == w.toolPrint {
		return fmt.Errorf("UnregisterTool fingerprint %q, want a new one (was %q)", removed.Fingerprint, w.toolPrint)
	}
	want, err := w.listing(&pb.ListDefinitionsSortedRequest{})
	if err != nil {
		return err
	}
	if want.Fingerprint != removed.Fingerprint {
		return fmt.Errorf("ListDefinitionsSorted fingerprint %q, UnregisterTool said %q", want.Fingerprint, removed.Fingerprint)
	}
	if slices.Contains(names(want.Definitions), w.tool) {
		return fmt.Errorf("ListDefinitionsSorted still lists %s after UnregisterTool", w.tool)
	}
	_, err = w.everyWatch("unregistering "+w.tool, want, w.names, w.toolChatPrint)
	return err
}

// authorised is a context carrying the registry token.
func (w *watcher) authorised() context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+w.token)
}

// everyWatch checks the messages of a change (`after`, e.g. "registering go_watch_1"): the
// plain, the SDK's and the known-fingerprint watches deliver want, ListDefinitionsSorted's
// answer, listing wantNames; the openai_chat watch delivers the same names in OpenAI Chat
// format, as ListDefinitionsSorted formats them, with a fingerprint other than chatWas. Then
// no watch sends anything more. It returns the openai_chat fingerprint.
func (w *watcher) everyWatch(after string, want *pb.ListDefinitionsSortedResponse, wantNames []string, chatWas string) (string, error) {
	for _, open := range w.watches[:3] {
		message, err := open.next()
		if err != nil {
			return "", err
		}
		if err := sameListing(message, want); err != nil {
			return "", fmt.Errorf("%s watch after %s: %w", open.name, after, err)
		}
		if !slices.Equal(names(message.Definitions), wantNames) {
			return "", fmt.Errorf("%s watch after %s lists %v, want %v", open.name, after, names(message.Definitions), wantNames)
		}
	}
	message, err := w.watches[3].next()
	if err != nil {
		return "", err
	}
	listed, err := chatNames(message)
	if err != nil {
		return "", fmt.Errorf("openai_chat watch after %s: %w", after, err)
	}
	if !slices.Equal(listed, wantNames) {
		return "", fmt.Errorf("openai_chat watch after %s lists %v, want %v", after, listed, wantNames)
	}
	chat, err := w.listing(chatRequest)
	if err != nil {
		return "", err
	}
	if message.Fingerprint == chatWas || !proto.Equal(message, chat) {
		return "", fmt.Errorf("openai_chat watch after %s: fingerprint %q (was %q), ListDefinitionsSorted says %q",
			after, message.Fingerprint, chatWas, chat.Fingerprint)
	}
	// One message per change: nothing else is on its way.
	time.Sleep(watchQuiet)
	for _, open := range w.watches {
		select {
		case r := <-open.messages:
			return "", fmt.Errorf("%s watch sent another message after %s: %v %v", open.name, after, r.message, r.err)
		default:
		}
	}
	return message.Fingerprint, nil
}

// cancellation cancels every watch's context: each ends with CANCELED.
func (w *watcher) cancellation() error {
	for _, open := range w.watches {
		open.cancel()
		select {
		case r, ok := <-open.messages:
			if !ok || r.err == nil {
				return fmt.Errorf("%s watch: a message after the cancel: %v", open.name, r.message)
			}
			if status.Code(r.err) != codes.Canceled {
				return fmt.Errorf("%s watch ended with %v, want CANCELED", open.name, r.err)
			}
		case <-time.After(watchWait):
			return fmt.Errorf("%s watch did not end within %v of the cancel", open.name, watchWait)
		}
	}
	return nil
}
