"""Clients of a remote llmworker server: the async and sync remote handles, ``RemoteTool``,
batches and streams over gRPC, the registry client and client-side balancing.

The top layer: it may import every other layer. Loaded on first use, so an in-process
``import llmworker`` does not import grpc. Public names are re-exported by ``llmworker``.
"""
