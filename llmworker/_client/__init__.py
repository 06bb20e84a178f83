"""Clients of a remote llmworker server: the async and sync remote handles, ``RemoteTool``,
batches and streams over gRPC, the registry client and client-side balancing.

The top layer: it may import every other layer. Loaded on first use, so an in-process
``import llmworker`` does not import grpc. Public names are re-exported by ``llmworker``.

Every RPC is defined once, in ``_wire.stubs``; the handles share their non-I/O part (``base``),
so ``remote`` and ``sync_remote`` only do I/O. A caller token is checked by ``_wire`` for
every client alike: on an asyncio channel it goes with each call through ``aio_channel``'s
interceptors, on the blocking channel as ``bearer_metadata``.
"""
