"""The llmworker gRPC server (see issue: gRPC service)."""
