"""Definitions in provider shapes, and strict-mode schemas."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal, cast

import grpc
import grpc.aio
import pytest
from pydantic import BaseModel, Field

from llmworker import (
    DefinitionFormat,
    Mutable,
    StrictSchemaError,
    ToolFactory,
    ToolMeta,
    Worker,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker._formats.strict import strict_schema
from llmworker._wire.messages import format_number
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from tests.grpc_support import failure_of, serve
from tests.support import EchoTool


class Address(BaseModel):
    street: str
    country: str | None = None


@tool_registry
class Zoo:
    @tool
    async def ship(
        self,
        to: Address,
        speed: Literal["slow", "fast"] = "slow",
        items: Annotated[list[str], Field(max_length=5)] | None = None,
    ) -> str:
        """Ship things."""
        return "shipped"

    @tool
    async def ping(self) -> str:
        """Ping."""
        return "pong"


def handle_of(*definitions: ToolFactory) -> Worker[Mutable]:
    worker: Worker[Mutable] = Worker()
    worker.register_tools(definitions)
    return worker


def formatted(worker: Worker[Mutable], form: DefinitionFormat, *, cache_last: bool = False) -> Any:
    """The formatted definitions, parsed (Any: the tests index into provider shapes)."""
    handle = worker.tool_server_handle()
    return json.loads(handle.definitions_for(form, cache_last=cache_last).json)


def test_each_format_has_the_providers_shape() -> None:
    worker = handle_of(*tool_definitions(Zoo()))
    chat = formatted(worker, DefinitionFormat.OPENAI_CHAT)
    assert [entry["function"]["name"] for entry in chat] == ["ping", "ship"]
    assert chat[0] == {
        "type": "function",
        "function": {
            "name": "ping",
            "description": "Ping.",
            "parameters": {"additionalProperties": False, "properties": {}, "type": "object"},
        },
    }
    strict_chat = formatted(worker, DefinitionFormat.OPENAI_CHAT_STRICT)
    assert strict_chat[1]["function"]["strict"] is True
    responses = formatted(worker, DefinitionFormat.OPENAI_RESPONSES)
    assert set(responses[0]) == {"type", "name", "description", "parameters", "strict"}
    assert responses[0]["strict"] is False
    anthropic = formatted(worker, DefinitionFormat.ANTHROPIC, cache_last=True)
    assert set(anthropic[0]) == {"name", "description", "input_schema"}
    assert anthropic[-1]["cache_control"] == {"type": "ephemeral"}
    gemini = formatted(worker, DefinitionFormat.GEMINI)
    assert len(gemini) == 1
    declarations = gemini[0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["ping", "ship"]
    assert "parametersJsonSchema" in declarations[0]


def test_formats_are_byte_stable_and_built_once_per_change() -> None:
    a = handle_of(*tool_definitions(Zoo()))
    b = handle_of(*reversed(tool_definitions(Zoo())))
    for form in DefinitionFormat:
        first = a.tool_server_handle().definitions_for(form)
        assert first == b.tool_server_handle().definitions_for(form)
        assert a.tool_server_handle().definitions_for(form) is first  # cached
    before = a.tool_server_handle().definitions_for(DefinitionFormat.ANTHROPIC)
    a.register_tool(ToolFactory(ToolMeta("zzz"), EchoTool))
    after = a.tool_server_handle().definitions_for(DefinitionFormat.ANTHROPIC)
    assert after.fingerprint != before.fingerprint
    assert b'"zzz"' in after.json


def test_strict_schemas_close_objects_and_make_optional_fields_nullable() -> None:
    worker = handle_of(*tool_definitions(Zoo()))
    meta = worker.tool_server_handle().get_tool("ship")
    assert meta is not None
    schema: Any = strict_schema(meta[0].input_schema, "ship")
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["to", "speed", "items"]
    speed = schema["properties"]["speed"]
    assert "default" not in json.dumps(speed)
    assert {"type": "null"} in speed["anyOf"]
    address = schema["$defs"]["Address"]
    assert address["additionalProperties"] is False
    assert address["required"] == ["street", "country"]


@pytest.mark.parametrize(
    ("schema", "path", "problem"),
    [
        ({"type": "object", "properties": {"a": {"not": {"type": "string"}}}},
         "$.properties.a.not", "'not'"),
        ({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"minLength": 1}]}}},
         "$.properties.a.allOf", "'allOf'"),
        ({"type": "object", "patternProperties": {"^x": {}}}, "$.patternProperties",
         "'patternProperties'"),
        ({"type": "object", "properties": {"m": {"type": "object",
                                                  "additionalProperties": {"type": "integer"}}}},
         "$.properties.m.additionalProperties", "free keys"),
        ({"type": "object", "properties": {"e": {"enum": list(range(1001))}}}, "$", "enum values"),
        ({"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(5001)}},
         "$", "properties"),
    ],
)  # fmt: skip
def test_what_strict_mode_cannot_take_is_refused_naming_the_tool_and_path(
    schema: dict[str, object], path: str, problem: str
) -> None:
    with pytest.raises(StrictSchemaError, match=problem) as raised:
        strict_schema(ToolMeta("t", "", schema).input_schema, "t")
    assert raised.value.tool == "t"
    assert raised.value.path == path
    assert "tool 't'" in str(raised.value)


def test_deep_nesting_is_refused_and_one_part_all_of_is_merged() -> None:
    deep: dict[str, object] = {"type": "string"}
    for _ in range(11):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"]}
    with pytest.raises(StrictSchemaError, match="objects nest 11 levels deep, over the 10 allowed"):
        strict_schema(ToolMeta("t", "", deep).input_schema, "t")
    merged = strict_schema(
        ToolMeta(
            "t", "", {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}}
        ).input_schema,
        "t",
    )
    assert merged["properties"] == {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}


def test_a_strict_format_names_the_tool_it_cannot_take_and_gemini_names_are_checked() -> None:
    bad = ToolMeta("maps", "", {"type": "object", "additionalProperties": {"type": "string"}})
    worker = handle_of(ToolFactory(bad, EchoTool))
    with pytest.raises(StrictSchemaError, match="tool 'maps'"):
        worker.tool_server_handle().definitions_for(DefinitionFormat.OPENAI_CHAT_STRICT)
    assert formatted(worker, DefinitionFormat.OPENAI_CHAT)  # the loose format takes it
    digit = handle_of(ToolFactory(ToolMeta("1tool"), EchoTool))
    with pytest.raises(ValueError, match="tool '1tool': Gemini takes names"):
        digit.tool_server_handle().definitions_for(DefinitionFormat.GEMINI)


def test_a_cached_refusal_does_not_grow_its_traceback_each_time_it_is_raised() -> None:
    bad = ToolMeta("maps", "", {"type": "object", "additionalProperties": {"type": "string"}})
    handle = handle_of(ToolFactory(bad, EchoTool)).tool_server_handle()
    depths: list[int] = []
    for _ in range(5):
        with pytest.raises(StrictSchemaError) as raised:
            handle.definitions_for(DefinitionFormat.OPENAI_CHAT_STRICT)
        depth, frame = 0, raised.value.__traceback__
        while frame is not None:
            depth, frame = depth + 1, frame.tb_next
        depths.append(depth)
    assert len(set(depths)) == 1, depths


class Parcel(BaseModel):
    weight: float
    postcode: str = "00000"
    fragile: bool = False


@tool_registry
class Post:
    @tool
    async def send(self, parcel: Parcel, note: str = "") -> str:
        """Send a parcel."""
        return f"{parcel.postcode}/{parcel.fragile}/{note or '-'}"


async def test_null_for_a_top_level_optional_argument_selects_its_default() -> None:
    worker = handle_of(*tool_definitions(Post()))
    definitions = formatted(worker, DefinitionFormat.OPENAI_CHAT_STRICT)
    parameters = definitions[0]["function"]["parameters"]
    assert parameters["required"] == ["parcel", "note"]
    parcel = parameters["$defs"]["Parcel"]
    assert parcel["required"] == ["weight", "postcode", "fragile"]
    assert {"type": "null"} in parcel["properties"]["postcode"]["anyOf"]
    call = '{"parcel": {"weight": 1.5}, "note": null}'
    assert await worker.call_tool("send", call) == "00000/False/-"
    assert await worker.call_tool("send", '{"parcel": {"weight": 1, "postcode": "X1"}}') == (
        "X1/False/-"
    )


async def test_the_server_sends_each_format_built_once_with_its_fingerprint() -> None:
    async with (
        serve(worker=handle_of(*tool_definitions(Zoo()))) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        local = served.app.registry.handle
        for form in DefinitionFormat:
            request = pb.ListDefinitionsSortedRequest(format=format_number(form))
            reply = await stub.ListDefinitionsSorted(request, timeout=10)
            expected = local.definitions_for(form)
            assert reply.definitions_json.encode() == expected.json
            assert reply.fingerprint == hashlib.sha256(expected.json).hexdigest()
            assert not reply.definitions
            request.known_fingerprint = reply.fingerprint
            again = await stub.ListDefinitionsSorted(request, timeout=10)
            assert again.unchanged
            assert not again.definitions_json
        cached = pb.ListDefinitionsSortedRequest(
            format=format_number(DefinitionFormat.ANTHROPIC), anthropic_cache_control=True
        )
        reply = await stub.ListDefinitionsSorted(cached, timeout=10)
        assert json.loads(reply.definitions_json)[-1]["cache_control"] == {"type": "ephemeral"}
        plain = await stub.ListDefinitionsSorted(pb.ListDefinitionsSortedRequest(), timeout=10)
        assert plain.definitions
        assert not plain.definitions_json


async def test_a_format_the_registry_cannot_take_or_an_unknown_one_gets_a_reason() -> None:
    bad = ToolMeta("maps", "", {"type": "object", "additionalProperties": {"type": "string"}})
    async with (
        serve(worker=handle_of(ToolFactory(bad, EchoTool))) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        strict = format_number(DefinitionFormat.OPENAI_CHAT_STRICT)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.ListDefinitionsSorted(pb.ListDefinitionsSortedRequest(format=strict))
        failure = failure_of(caught.value)
        assert (failure.code, failure.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "DEFINITION_FORMAT_UNSUPPORTED",
        )
        assert "tool 'maps'" in failure.message
        unknown = pb.ListDefinitionsSortedRequest(format=cast("pb.DefinitionFormat.ValueType", 99))
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.ListDefinitionsSorted(unknown)
        assert failure_of(caught.value).reason == "INVALID_REQUEST"
