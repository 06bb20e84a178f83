package llmworker

import (
	"errors"

	pb "github.com/llmworker/llmworker/sdk/go/llmworkerv1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Domain is the ErrorInfo domain of every status the server sends.
const Domain = "llmworker"

// Failure is a failed call as the server explained it: the gRPC code, the reason from the
// README's table (ErrorInfo.reason), the message (what went wrong and what to do) and the
// ErrorInfo metadata (the tool's name, for instance). Every error this package returns for
// a status the server sent wraps one, inside the type of its reason:
//
//	var notFound llmworker.ToolNotFound
//	if errors.As(err, &notFound) { … notFound.Metadata["tool"] … }
//
// A status with no llmworker ErrorInfo (a proxy's, or the client's own deadline) is a
// *Failure with an empty Reason.
type Failure struct {
	Code     codes.Code
	Reason   string
	Message  string
	Metadata map[string]string
	status   *status.Status
}

func (e *Failure) Error() string {
	if e.Reason == "" {
		return e.Code.String() + ": " + e.Message
	}
	return e.Reason + ": " + e.Message
}

// GRPCStatus gives the status the error came from (status.FromError and status.Code read it).
func (e *Failure) GRPCStatus() *status.Status { return e.status }

// One type per reason of the README's table; errors.As tells them apart.
type (
	ToolNotFound                struct{ *Failure }
	ToolInvalidArgument         struct{ *Failure }
	ToolExecutionFailed         struct{ *Failure }
	ToolInternal                struct{ *Failure }
	InvalidRequest              struct{ *Failure }
	ToolTimeout                 struct{ *Failure }
	ConcurrencyLimit            struct{ *Failure }
	ProviderUnavailable         struct{ *Failure }
	HookAborted                 struct{ *Failure }
	Unauthenticated             struct{ *Failure }
	RegistryLocked              struct{ *Failure }
	DuplicateName               struct{ *Failure }
	RegistryFull                struct{ *Failure }
	ShuttingDown                struct{ *Failure }
	ApprovalRequired            struct{ *Failure }
	CallDenied                  struct{ *Failure }
	ResumeTokenUnknown          struct{ *Failure }
	PausedBatchesFull           struct{ *Failure }
	DefinitionFormatUnsupported struct{ *Failure }
	ToolForbidden               struct{ *Failure }
	BatchPausedElsewhere        struct{ *Failure }
	ResumeForbidden             struct{ *Failure }
	ProviderForbidden           struct{ *Failure }
	BatchInterrupted            struct{ *Failure }
	StateUnavailable            struct{ *Failure }
	BatchUnresumable            struct{ *Failure }
)

func (e ToolNotFound) Unwrap() error                { return e.Failure }
func (e ToolInvalidArgument) Unwrap() error         { return e.Failure }
func (e ToolExecutionFailed) Unwrap() error         { return e.Failure }
func (e ToolInternal) Unwrap() error                { return e.Failure }
func (e InvalidRequest) Unwrap() error              { return e.Failure }
func (e ToolTimeout) Unwrap() error                 { return e.Failure }
func (e ConcurrencyLimit) Unwrap() error            { return e.Failure }
func (e ProviderUnavailable) Unwrap() error         { return e.Failure }
func (e HookAborted) Unwrap() error                 { return e.Failure }
func (e Unauthenticated) Unwrap() error             { return e.Failure }
func (e RegistryLocked) Unwrap() error              { return e.Failure }
func (e DuplicateName) Unwrap() error               { return e.Failure }
func (e RegistryFull) Unwrap() error                { return e.Failure }
func (e ShuttingDown) Unwrap() error                { return e.Failure }
func (e ApprovalRequired) Unwrap() error            { return e.Failure }
func (e CallDenied) Unwrap() error                  { return e.Failure }
func (e ResumeTokenUnknown) Unwrap() error          { return e.Failure }
func (e PausedBatchesFull) Unwrap() error           { return e.Failure }
func (e DefinitionFormatUnsupported) Unwrap() error { return e.Failure }
func (e ToolForbidden) Unwrap() error               { return e.Failure }
func (e BatchPausedElsewhere) Unwrap() error        { return e.Failure }
func (e ResumeForbidden) Unwrap() error             { return e.Failure }
func (e ProviderForbidden) Unwrap() error           { return e.Failure }
func (e BatchInterrupted) Unwrap() error            { return e.Failure }
func (e StateUnavailable) Unwrap() error            { return e.Failure }
func (e BatchUnresumable) Unwrap() error            { return e.Failure }

// byReason makes the typed error of each reason.
var byReason = map[string]func(*Failure) error{
	"TOOL_NOT_FOUND":                func(e *Failure) error { return ToolNotFound{e} },
	"TOOL_INVALID_ARGUMENT":         func(e *Failure) error { return ToolInvalidArgument{e} },
	"TOOL_EXECUTION_FAILED":         func(e *Failure) error { return ToolExecutionFailed{e} },
	"TOOL_INTERNAL":                 func(e *Failure) error { return ToolInternal{e} },
	"INVALID_REQUEST":               func(e *Failure) error { return InvalidRequest{e} },
	"TOOL_TIMEOUT":                  func(e *Failure) error { return ToolTimeout{e} },
	"CONCURRENCY_LIMIT":             func(e *Failure) error { return ConcurrencyLimit{e} },
	"PROVIDER_UNAVAILABLE":          func(e *Failure) error { return ProviderUnavailable{e} },
	"HOOK_ABORTED":                  func(e *Failure) error { return HookAborted{e} },
	"UNAUTHENTICATED":               func(e *Failure) error { return Unauthenticated{e} },
	"REGISTRY_LOCKED":               func(e *Failure) error { return RegistryLocked{e} },
	"DUPLICATE_NAME":                func(e *Failure) error { return DuplicateName{e} },
	"REGISTRY_FULL":                 func(e *Failure) error { return RegistryFull{e} },
	"SHUTTING_DOWN":                 func(e *Failure) error { return ShuttingDown{e} },
	"APPROVAL_REQUIRED":             func(e *Failure) error { return ApprovalRequired{e} },
	"CALL_DENIED":                   func(e *Failure) error { return CallDenied{e} },
	"RESUME_TOKEN_UNKNOWN":          func(e *Failure) error { return ResumeTokenUnknown{e} },
	"PAUSED_BATCHES_FULL":           func(e *Failure) error { return PausedBatchesFull{e} },
	"DEFINITION_FORMAT_UNSUPPORTED": func(e *Failure) error { return DefinitionFormatUnsupported{e} },
	"TOOL_FORBIDDEN":                func(e *Failure) error { return ToolForbidden{e} },
	"BATCH_PAUSED_ELSEWHERE":        func(e *Failure) error { return BatchPausedElsewhere{e} },
	"RESUME_FORBIDDEN":              func(e *Failure) error { return ResumeForbidden{e} },
	"PROVIDER_FORBIDDEN":            func(e *Failure) error { return ProviderForbidden{e} },
	"BATCH_INTERRUPTED":             func(e *Failure) error { return BatchInterrupted{e} },
	"STATE_UNAVAILABLE":             func(e *Failure) error { return StateUnavailable{e} },
	"BATCH_UNRESUMABLE":             func(e *Failure) error { return BatchUnresumable{e} },
}

// Reasons lists every reason this package has a type for.
func Reasons() []string {
	reasons := make([]string, 0, len(byReason))
	for reason := range byReason {
		reasons = append(reasons, reason)
	}
	return reasons
}

// FromError turns an error of a gRPC call into the typed error of its reason (a *Failure
// when the reason is unknown or absent); nil stays nil, and an error that carries no gRPC
// status is returned as it is.
func FromError(err error) error {
	if err == nil {
		return nil
	}
	var already *Failure
	if errors.As(err, &already) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return fromStatus(st)
}

// ResultError is the typed error of a batch's result (CallResult.error: the status CallTool
// would have failed with), or nil for a result that succeeded or was skipped.
//
//	for _, result := range outcome.Completed {
//		var denied llmworker.CallDenied
//		if errors.As(llmworker.ResultError(result), &denied) { … }
//	}
func ResultError(result *pb.CallResult) error {
	if result.GetError() == nil {
		return nil
	}
	return fromStatus(status.FromProto(result.GetError()))
}

func fromStatus(st *status.Status) error {
	failure := &Failure{Code: st.Code(), Message: st.Message(), status: st}
	for _, detail := range st.Details() {
		if info, ok := detail.(*errdetails.ErrorInfo); ok && info.GetDomain() == Domain {
			failure.Reason, failure.Metadata = info.GetReason(), info.GetMetadata()
			break
		}
	}
	if typed, ok := byReason[failure.Reason]; ok {
		return typed(failure)
	}
	return failure
}
