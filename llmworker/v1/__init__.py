"""Generated gRPC/protobuf code for llmworker.v1 (see proto/llmworker/v1; `make proto`)."""
