"""The floor: a bare grpc.aio ToolService that does no tool work. NOT product code.

CallTool answers with the input as output (no parsing, no validation, no hooks, no logging);
RunProviderToolCalls reads an OpenAI Chat message and echoes each call's arguments;
CallToolStream sends ``n`` one-line chunks, then the input;
ListDefinitionsSorted answers with response bytes built once at start-up for ``--tools N``
benchmark tools (the same bytes the real server sends). It measures what gRPC in Python
costs by itself, so each scenario can be reported as a ratio to it.

    python -m bench.floor_server --port 50151 [--tools 1000] [--reuse-port]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from collections.abc import AsyncIterator, Awaitable
from typing import TypeVar

import grpc
import grpc.aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from bench.many_tools import build_class
from llmworker import Worker, tool_definitions
from llmworker._wire.messages import definitions_response
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.event_loop import choose_loop
from llmworker_server.rpc.reflection import enable_reflection

Req = TypeVar("Req")
Resp = TypeVar("Resp")


Context = grpc.aio.ServicerContext[Req, Awaitable[Resp]]


class FloorToolService(tool_service_pb2_grpc.ToolServiceServicer):
    def __init__(self, definitions: pb.ListDefinitionsSortedResponse) -> None:
        self._definitions = definitions

    async def GetTool(
        self, request: pb.GetToolRequest, context: Context[pb.GetToolRequest, pb.GetToolResponse]
    ) -> pb.GetToolResponse:
        return pb.GetToolResponse()

    async def CallTool(
        self,
        request: pb.CallToolRequest,
        context: Context[pb.CallToolRequest, pb.CallToolResponse],
    ) -> pb.CallToolResponse:
        return pb.CallToolResponse(output=request.input_json)

    async def ListDefinitionsSorted(
        self,
        request: pb.ListDefinitionsSortedRequest,
        context: Context[pb.ListDefinitionsSortedRequest, pb.ListDefinitionsSortedResponse],
    ) -> pb.ListDefinitionsSortedResponse:
        return self._definitions

    async def CallTools(
        self,
        request: pb.CallToolsRequest,
        context: Context[pb.CallToolsRequest, pb.CallToolsResponse],
    ) -> pb.CallToolsResponse:
        results = [
            pb.CallResult(call_id=call.call_id, output=call.input_json) for call in request.calls
        ]
        return pb.CallToolsResponse(completed=pb.CompletedBatch(results=results))

    async def ResumeBatch(
        self,
        request: pb.ResumeBatchRequest,
        context: Context[pb.ResumeBatchRequest, pb.CallToolsResponse],
    ) -> pb.CallToolsResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "the floor never pauses")

    async def ListPausedBatches(
        self,
        request: pb.ListPausedBatchesRequest,
        context: Context[pb.ListPausedBatchesRequest, pb.ListPausedBatchesResponse],
    ) -> pb.ListPausedBatchesResponse:
        return pb.ListPausedBatchesResponse()  # the floor never pauses

    async def SearchTools(
        self,
        request: pb.SearchToolsRequest,
        context: Context[pb.SearchToolsRequest, pb.SearchToolsResponse],
    ) -> pb.SearchToolsResponse:
        return pb.SearchToolsResponse()  # the floor finds nothing

    async def RunProviderToolCalls(
        self,
        request: pb.RunProviderToolCallsRequest,
        context: Context[pb.RunProviderToolCallsRequest, pb.RunProviderToolCallsResponse],
    ) -> pb.RunProviderToolCallsResponse:
        """OpenAI Chat only: each tool call's arguments echoed in its ``role: tool`` message."""
        message = json.loads(request.model_output_json)
        answers = [
            {"role": "tool", "tool_call_id": call["id"], "content": call["function"]["arguments"]}
            for call in message["tool_calls"]
        ]
        return pb.RunProviderToolCallsResponse(results_message_json=json.dumps(answers))

    async def CallToolStream(
        self,
        request: pb.CallToolRequest,
        context: grpc.aio.ServicerContext[pb.CallToolRequest, AsyncIterator[pb.CallToolEvent]],
    ) -> AsyncIterator[pb.CallToolEvent]:
        """``n`` (from the JSON input, as the demo countdown takes it; 0 without) chunks of
        one line each, then the input as the result."""
        steps = json.loads(request.input_json).get("n", 0) if request.input_json else 0
        for _ in range(steps):
            yield pb.CallToolEvent(output_chunk=pb.OutputChunk(text="1\n"))
        yield pb.CallToolEvent(result=pb.CallToolResponse(output=request.input_json))

    async def WatchDefinitions(
        self,
        request: pb.WatchDefinitionsRequest,
        context: grpc.aio.ServicerContext[
            pb.WatchDefinitionsRequest, AsyncIterator[pb.ListDefinitionsSortedResponse]
        ],
    ) -> AsyncIterator[pb.ListDefinitionsSortedResponse]:
        """The prebuilt definitions once; the floor's registry never changes."""
        yield self._definitions
        await asyncio.Event().wait()


def _definitions(count: int) -> pb.ListDefinitionsSortedResponse:
    worker = Worker()
    if count:
        worker.register_tools(tool_definitions(build_class(count)()))
    body = definitions_response(worker.tool_server_handle().definitions_snapshot())
    return pb.ListDefinitionsSortedResponse.FromString(body)


async def serve(port: int, tools: int, reuse_port: bool) -> None:
    server = grpc.aio.server(options=[("grpc.so_reuseport", 1 if reuse_port else 0)])
    tool_service_pb2_grpc.add_ToolServiceServicer_to_server(
        FloorToolService(_definitions(tools)), server
    )
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    # The same reflection as the server (stock grpcio-reflection cannot resolve method names).
    enable_reflection(server, ["llmworker.v1.ToolService", health.SERVICE_NAME])
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    print(f"floor serving {tools} tools on 127.0.0.1:{port}", flush=True)
    await stopping.wait()
    await server.stop(1)


def main() -> None:
    parser = argparse.ArgumentParser(description="The floor: a bare grpc.aio ToolService.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tools", type=int, default=0, help="benchmark tools to list")
    parser.add_argument("--reuse-port", action="store_true")
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    args = parser.parse_args()
    with asyncio.Runner(loop_factory=choose_loop(args.loop).new_event_loop) as runner:
        runner.run(serve(args.port, args.tools, args.reuse_port))


if __name__ == "__main__":
    main()
