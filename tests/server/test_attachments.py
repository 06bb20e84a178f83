"""Images, audio and resources beside a result's text: returned by a decorated tool, kept by
batches, carried by CallTool, CallToolStream and CallTools, read back by the Python client,
bounded by the message limit like the text, and sent to MCP clients as content blocks."""

from __future__ import annotations

import base64

import grpc
import grpc.aio
import mcp_types as types
import pytest
from mcp import Client

from llmworker import (
    Attachment,
    Audio,
    Completed,
    EmbeddedResource,
    Image,
    Mutable,
    RemoteToolServerHandle,
    ResourceLink,
    ToolCall,
    ToolOutput,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.grpc_support import failure_of, serve

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
ATTACHED: tuple[Attachment, ...] = (
    Image(PNG, "image/png"),
    Audio(b"RIFF....WAVEfmt ", "audio/wav"),
    ResourceLink("file:///tmp/report.pdf", "report", "application/pdf", "the full report"),
    EmbeddedResource("test://notes", text="some notes", mime_type="text/plain"),
    EmbeddedResource("test://blob", blob=b"\x00\x01\x02", mime_type="application/octet-stream"),
)


@tool_registry
class Drawing:
    @tool
    async def chart(self, title: str) -> ToolOutput:
        """A chart of ``title``, as an image with its sources."""
        return ToolOutput(f"chart: {title}", attachments=ATTACHED)

    @tool
    async def huge(self) -> ToolOutput:
        """An image larger than any response may carry."""
        return ToolOutput("huge", attachments=(Image(b"\x89PNG" + b"0" * 200_000, "image/png"),))


def worker() -> Worker[Mutable]:
    drawing: Worker[Mutable] = Worker()
    drawing.register_tools(tool_definitions(Drawing()))
    return drawing


async def test_a_tool_returns_attachments_beside_its_text_in_process() -> None:
    local = worker()
    output = await local.call_tool_output("chart", '{"title": "sales"}')
    assert output == ToolOutput("chart: sales", attachments=ATTACHED)
    batch = await local.call_tools([ToolCall("c", "chart", '{"title": "sales"}')])
    assert isinstance(batch, Completed)
    assert batch.results[0].attachments == ATTACHED
    definition = local.tool_server_handle().get_tool("chart")
    assert definition is not None
    assert definition[0].output_schema is None  # ToolOutput is no structured type


async def test_attachments_cross_the_wire_on_every_call_path() -> None:
    async with (
        serve(worker=worker(), internal=False) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        request = pb.CallToolRequest(name="chart", input_json='{"title": "sales"}')
        unary = await stub.CallTool(request, timeout=10)
        assert unary.output == "chart: sales"
        kinds = [attachment.WhichOneof("kind") for attachment in unary.attachments]
        assert kinds == ["image", "audio", "resource_link", "resource", "resource"]
        assert unary.attachments[0].image.data == PNG
        streamed = [event async for event in stub.CallToolStream(request, timeout=10)]
        assert streamed[-1].result.attachments == unary.attachments
        batch = await stub.CallTools(
            pb.CallToolsRequest(calls=[pb.CallToolRequest(call_id="c", name="chart",
                                                          input_json='{"title": "sales"}')]),
            timeout=10,
        )  # fmt: skip
        assert batch.completed.results[0].attachments == unary.attachments
        async with await RemoteToolServerHandle.connect(served.target) as handle:
            remote = await handle.call_tools([ToolCall("c", "chart", '{"title": "sales"}')])
            assert isinstance(remote, Completed)
            assert remote.results[0].attachments == ATTACHED
            events = [event async for event in handle.stream_tool("chart", '{"title": "x"}')]
            assert events[-1] == ToolOutput("chart: x", attachments=ATTACHED)


async def test_attachments_count_against_the_message_limit() -> None:
    async with (
        serve(worker=worker(), internal=False, max_message_bytes=64 * 1024) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub.CallTool(pb.CallToolRequest(name="huge", input_json="{}"), timeout=10)
        failure = failure_of(raised.value)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INTERNAL, "TOOL_INTERNAL")
        assert "--max-message-bytes" in failure.message
        small = pb.CallToolRequest(name="chart", input_json='{"title": "ok"}')
        assert (await stub.CallTool(small, timeout=10)).output == "chart: ok"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Image(PNG, "text/plain"), "image/\\* MIME type"),
        (lambda: Audio(b"", "audio/wav"), "needs its bytes"),
        (lambda: ResourceLink(""), "needs a URI"),
        (lambda: EmbeddedResource("test://x"), "text or blob"),
        (lambda: EmbeddedResource("test://x", text="a", blob=b"b"), "text or blob"),
    ],
)
def test_an_attachment_that_cannot_be_sent_is_refused_where_it_is_made(
    make: object, message: str
) -> None:
    assert callable(make)
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_attachments_become_mcp_content_blocks(mode: str) -> None:
    async with serve(worker=worker(), internal=False, mcp_address="127.0.0.1:0") as served:
        url = f"http://127.0.0.1:{served.app.mcp_port}/mcp"
        async with Client(url, mode=mode) as client:
            result = await client.call_tool("chart", {"title": "sales"})
    text, image, audio, link, notes, blob = result.content
    assert isinstance(text, types.TextContent)
    assert text.text == "chart: sales"
    assert isinstance(image, types.ImageContent)
    assert (base64.b64decode(image.data), image.mime_type) == (PNG, "image/png")
    assert isinstance(audio, types.AudioContent)
    assert audio.mime_type == "audio/wav"
    assert isinstance(link, types.ResourceLink)
    assert (link.uri, link.name, link.mime_type) == (
        "file:///tmp/report.pdf",
        "report",
        "application/pdf",
    )
    assert isinstance(notes, types.EmbeddedResource)
    assert isinstance(notes.resource, types.TextResourceContents)
    assert notes.resource.text == "some notes"
    assert isinstance(blob, types.EmbeddedResource)
    assert isinstance(blob.resource, types.BlobResourceContents)
    assert base64.b64decode(blob.resource.blob) == b"\x00\x01\x02"


@tool_registry
class Careless:
    @tool
    async def stray(self) -> ToolOutput:
        """Attaches something that is no attachment."""
        return ToolOutput("text", attachments=("not an attachment",))  # type: ignore[arg-type]


async def test_a_stray_attachment_is_the_tool_s_internal_error_and_the_batch_keeps_the_rest() -> (
    None
):
    careless: Worker[Mutable] = Worker()
    careless.register_tools([*tool_definitions(Careless()), *tool_definitions(Drawing())])
    batch = await careless.call_tools(
        [ToolCall("s", "stray", "{}"), ToolCall("c", "chart", '{"title": "kept"}')]
    )
    assert isinstance(batch, Completed)
    stray, chart = batch.results
    assert stray.is_error
    assert "not Image, Audio, ResourceLink or EmbeddedResource" in stray.content
    assert chart.attachments == ATTACHED
    with pytest.raises(TypeError, match="data is bytes, not str"):
        Image("abc", "image/png")  # type: ignore[arg-type]
