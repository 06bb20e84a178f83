"""CallTools, ResumeBatch and the per-call context over gRPC, against a real server."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

import grpc
import grpc.aio
import pytest
from google.rpc import error_details_pb2  # pyright: ignore[reportMissingTypeStubs]

from llmworker import (
    Abort,
    Approve,
    ApproveWithInput,
    Completed,
    Continue,
    DefinitionFormat,
    Deny,
    Mutable,
    Pause,
    Paused,
    PreToolCallOutcome,
    RemoteServiceError,
    RemoteToolServerHandle,
    ToolBatchAborted,
    ToolCall,
    ToolCallContext,
    ToolContext,
    ToolError,
    ToolRegistryClient,
    ToolServerError,
    Worker,
    WorkerError,
    tool,
    tool_definitions,
    tool_registry,
)
from llmworker._wire.messages import format_number
from llmworker.v1 import tool_service_pb2 as pb
from llmworker.v1 import tool_service_pb2_grpc
from llmworker_server.state.memory import MemoryStore
from tests.grpc_support import RpcFailure, Served, failure_of, serve


@tool_registry
class BatchTools:
    def __init__(self) -> None:
        self.deleted: list[str] = []
        self.ran = 0

    @tool
    async def echo(self, text: str) -> str:
        """Echo."""
        self.ran += 1
        return text

    @tool
    async def sleep(self, seconds: float) -> str:
        """Sleep."""
        await asyncio.sleep(seconds)
        return "slept"

    @tool(requires_approval=True, destructive=True)
    async def delete(self, path: str) -> str:
        """Delete after approval."""
        self.deleted.append(path)
        return f"deleted {path}"

    @tool
    async def whoami(self, context: ToolContext) -> dict[str, str]:
        """The call's context."""
        return {"call_id": context.call_id, **context.metadata}

    @tool
    async def repeat(self, text: str, times: int) -> str:
        """The text, ``times`` times."""
        return text * times

    @tool
    async def crash(self) -> str:
        """A defect."""
        raise KeyError("defect")


Stub = tool_service_pb2_grpc.ToolServiceStub


@asynccontextmanager
async def batch_server(
    hook: Callable[[ToolCallContext], PreToolCallOutcome] | None = None, **overrides: object
) -> AsyncGenerator[tuple[Served, Stub, BatchTools], None]:
    tools = BatchTools()
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(tools))
    if hook is not None:
        worker.add_pre_tool_call_hook(hook)
    async with (
        serve(None, worker=worker, **overrides) as served,
        grpc.aio.insecure_channel(served.target) as channel,
    ):
        yield served, Stub(channel), tools
        assert served.app.tools.in_flight == 0


def request(*calls: tuple[str, str, str], **metadata: str) -> pb.CallToolsRequest:
    return pb.CallToolsRequest(
        calls=[
            pb.CallToolRequest(call_id=call_id, name=name, input_json=body, metadata=metadata)
            for call_id, name, body in calls
        ]
    )


async def failure(call: Awaitable[object]) -> RpcFailure:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return failure_of(caught.value)


def info_of(result: pb.CallResult) -> error_details_pb2.ErrorInfo:
    info = error_details_pb2.ErrorInfo()
    assert result.error.details[0].Unpack(info)
    assert info.domain == "llmworker"
    return info


def reason_of(result: pb.CallResult) -> str:
    return info_of(result).reason


async def test_a_batch_runs_in_order_with_error_results_and_structured_outputs() -> None:
    async with batch_server() as (_, stub, _tools):
        response = await stub.CallTools(
            request(
                ("a", "echo", '{"text": "one"}'),
                ("b", "nope", "{}"),
                ("c", "echo", "{}"),
                ("d", "whoami", "{}"),
                ("e", "crash", "{}"),
                user="ada",
            ),
            timeout=10,
        )
        assert response.WhichOneof("outcome") == "completed"
        a, b, c, d, e = response.completed.results
        assert (a.call_id, a.output, a.is_error) == ("a", "one", False)
        assert (b.is_error, b.error.code, reason_of(b)) == (True, 5, "TOOL_NOT_FOUND")
        assert (c.error.code, reason_of(c)) == (3, "TOOL_INVALID_ARGUMENT")
        assert c.error.message == "Tool execution failed: Invalid argument: text: Field required"
        assert json.loads(d.structured_output_json) == {"call_id": "d", "user": "ada"}
        assert (e.error.code, reason_of(e)) == (2, "TOOL_EXECUTION_FAILED")
        assert info_of(e).metadata["call_id"]  # the server logged the defect under an id


async def test_approval_pauses_then_decisions_resume_over_the_remote_handle() -> None:
    async with batch_server() as (served, _, tools):
        handle = await RemoteToolServerHandle.connect(served.target, call_timeout=10)
        async with handle:
            meta = handle.get_tool("delete")
            assert meta is not None
            assert meta[0].requires_approval
            paused = await handle.call_tools(
                [
                    ToolCall("1", "echo", '{"text": "x"}'),
                    ToolCall("2", "delete", '{"path": "/a"}'),
                    ToolCall("3", "delete", '{"path": "/b"}'),
                    ToolCall("4", "delete", '{"path": "/c"}'),
                ]
            )
            assert isinstance(paused, Paused)
            assert paused.resume_token
            assert paused.expires_at is not None
            assert paused.awaiting_approval == ("2", "3", "4")
            assert tools.deleted == []
            assert tools.ran == 0  # nothing ran before the decisions
            with pytest.raises(WorkerError, match="resume it with the Worker or"):
                await Worker().resume(paused, {"2": Approve()})
            outcome = await handle.resume(
                paused,
                {"2": Approve(), "3": Deny("no"), "4": ApproveWithInput('{"path": "/z"}')},
            )
            assert isinstance(outcome, Completed)
            assert [r.content for r in outcome.results] == [
                "x",
                "deleted /a",
                "Tool call '3' to 'delete' was denied: no",
                "deleted /z",
            ]
            assert isinstance(outcome.results[2].error, RemoteServiceError)
            assert outcome.results[2].error.reason == "CALL_DENIED"
            assert sorted(tools.deleted) == ["/a", "/z"]
            with pytest.raises(WorkerError, match="already resumed"):
                await handle.resume(paused)


async def test_a_token_resumes_once_and_unknown_tokens_are_not_found() -> None:
    async with batch_server() as (_, stub, _tools):
        paused = await stub.CallTools(request(("1", "delete", '{"path": "/a"}')), timeout=10)
        token = paused.paused.resume_token
        approve = pb.CallDecision(call_id="1", approve=pb.Approval())
        resume = pb.ResumeBatchRequest(resume_token=token, decisions=[approve])
        done = await stub.ResumeBatch(resume, timeout=10)
        assert done.completed.results[0].output == "deleted /a"
        again = await failure(stub.ResumeBatch(resume))
        assert (again.code, again.reason) == (grpc.StatusCode.NOT_FOUND, "RESUME_TOKEN_UNKNOWN")
        assert "do not send its calls again" in again.message
        assert again.metadata["resumed_at"].endswith("Z")
        wrong_secret = token.rpartition(".")[0] + ".not-its-secret"
        for bad in (wrong_secret, "", "x", token.split(".")[0] + ".wrong", "é" * 10_000):
            refused = await failure(stub.ResumeBatch(pb.ResumeBatchRequest(resume_token=bad)))
            assert (refused.code, refused.reason) == (
                grpc.StatusCode.NOT_FOUND,
                "RESUME_TOKEN_UNKNOWN",
            )


async def test_bad_decisions_are_refused_and_the_token_stays_usable() -> None:
    async with batch_server() as (_, stub, tools):
        paused = await stub.CallTools(request(("1", "delete", '{"path": "/a"}')), timeout=10)
        token = paused.paused.resume_token
        for decisions in (
            [pb.CallDecision(call_id="9", approve=pb.Approval())],
            [pb.CallDecision(call_id="1")],
            [pb.CallDecision(call_id="1", deny=pb.Denial(reason="r" * 2000))],
            [
                pb.CallDecision(call_id="1", approve=pb.Approval()),
                pb.CallDecision(call_id="1", approve=pb.Approval()),
            ],
        ):
            resume = pb.ResumeBatchRequest(resume_token=token, decisions=decisions)
            refused = await failure(stub.ResumeBatch(resume, timeout=10))
            assert (refused.code, refused.reason) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "INVALID_REQUEST",
            )
        assert tools.deleted == []
        # no decision: the call awaits approval still, and the batch pauses again
        again = await stub.ResumeBatch(pb.ResumeBatchRequest(resume_token=token), timeout=10)
        assert again.paused.pending_calls[0].awaiting_approval
        assert again.paused.resume_token != token


async def test_malformed_batches_are_invalid_requests() -> None:
    async with batch_server(max_batch_calls=3) as (_, stub, tools):
        echo = '{"text": "x"}'
        for bad in (
            pb.CallToolsRequest(),
            request(*[(str(i), "echo", echo) for i in range(4)]),
            request(("", "echo", echo)),
            request(("a", "echo", echo), ("a", "echo", echo)),
            request(("a", "", echo)),
            request(("\n", "echo", echo)),
            request(("x" * 129, "echo", echo)),
            request(("a", "echo", echo), Bad="x"),
            request(("a", "echo", "x" * (2 << 20))),
        ):
            refused = await failure(stub.CallTools(bad, timeout=10))
            assert (refused.code, refused.reason) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "INVALID_REQUEST",
            ), refused
        assert tools.ran == 0


async def test_metadata_limits_apply_to_unary_calls_too() -> None:
    async with batch_server() as (_, stub, _tools):
        ok = pb.CallToolRequest(
            name="whoami", input_json="{}", call_id="id-1", metadata={"a.b_c-9": "v" * 4096}
        )
        reply = await stub.CallTool(ok, timeout=10)
        assert json.loads(reply.structured_output_json)["call_id"] == "id-1"
        for metadata in (
            {"UPPER": "x"},
            {"": "x"},
            {"k" * 65: "x"},
            {"big": "é" * 2049},
            {f"k{i}": "x" for i in range(65)},
        ):
            bad = pb.CallToolRequest(name="whoami", input_json="{}", metadata=metadata)
            refused = await failure(stub.CallTool(bad, timeout=10))
            assert refused.reason == "INVALID_REQUEST"
            assert "é" not in refused.message  # values are never echoed
        unassigned = await stub.CallTool(pb.CallToolRequest(name="whoami", input_json="{}"))
        assert json.loads(unassigned.structured_output_json)["call_id"]  # the server's own


async def test_a_unary_call_to_a_tool_needing_approval_names_call_tools() -> None:
    async with batch_server() as (_, stub, tools):
        call = pb.CallToolRequest(name="delete", input_json='{"path": "/a"}')
        refused = await failure(stub.CallTool(call, timeout=10))
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "APPROVAL_REQUIRED",
        )
        assert "CallTools" in refused.message
        assert tools.deleted == []


async def test_paused_batches_are_bounded_in_count_and_time() -> None:
    async with batch_server(max_paused_batches=2, pause_ttl=0.3) as (served, stub, tools):
        pause = request(("1", "delete", '{"path": "/a"}'), ("2", "echo", '{"text": "x"}'))
        first = await stub.CallTools(pause, timeout=10)
        await stub.CallTools(pause, timeout=10)
        full = await failure(stub.CallTools(pause, timeout=10))
        assert (full.code, full.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "PAUSED_BATCHES_FULL",
        )
        assert "nothing ran" in full.message
        await asyncio.sleep(0.4)
        token = first.paused.resume_token
        expired = await failure(stub.ResumeBatch(pb.ResumeBatchRequest(resume_token=token)))
        assert expired.reason == "RESUME_TOKEN_UNKNOWN"
        await served.app.tools.paused_batches.refresh()
        assert served.app.tools.paused_batches.count == 0  # expired batches are let go
        await stub.CallTools(pause, timeout=10)  # room again
        assert tools.ran == 0


async def test_every_call_of_a_batch_counts_against_the_concurrency_limit() -> None:
    async with batch_server(max_concurrent_calls=2) as (_, stub, tools):
        three = request(*[(str(i), "echo", '{"text": "x"}') for i in range(3)])
        refused = await failure(stub.CallTools(three, timeout=10))
        assert (refused.code, refused.reason) == (
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "CONCURRENCY_LIMIT",
        )
        two = request(*[(str(i), "echo", '{"text": "x"}') for i in range(2)])
        assert len((await stub.CallTools(two, timeout=10)).completed.results) == 2
        assert tools.ran == 2


async def test_timeouts_apply_per_call_in_a_batch() -> None:
    async with batch_server(tool_timeouts={"sleep": 0.2}) as (_, stub, _tools):
        response = await stub.CallTools(
            request(("slow", "sleep", '{"seconds": 30}'), ("fast", "echo", '{"text": "x"}')),
            timeout=10,
        )
        slow, fast = response.completed.results
        assert (slow.error.code, reason_of(slow)) == (4, "TOOL_TIMEOUT")
        assert (fast.output, fast.is_error) == ("x", False)


async def test_a_hook_abort_fails_the_batch_and_the_remote_handle_raises_it() -> None:
    def guard(context: ToolCallContext) -> PreToolCallOutcome:
        return Abort("no echoes today") if context.call.name == "echo" else Continue()

    async with batch_server(guard) as (served, stub, _tools):
        refused = await failure(stub.CallTools(request(("e1", "echo", '{"text": "x"}'))))
        assert (refused.code, refused.reason) == (grpc.StatusCode.ABORTED, "HOOK_ABORTED")
        async with await RemoteToolServerHandle.connect(served.target) as handle:
            with pytest.raises(ToolBatchAborted) as raised:
                await handle.call_tools([ToolCall("e2", "echo", '{"text": "x"}')])
            assert (raised.value.reason, raised.value.call_id) == ("no echoes today", "e2")


async def test_results_over_the_message_limit_are_dropped_largest_first() -> None:
    async with batch_server(max_message_bytes=64 * 1024) as (_, stub, _tools):
        big = json.dumps({"text": "x", "times": 40_000})
        response = await stub.CallTools(
            request(
                ("small", "echo", '{"text": "ok"}'), ("b1", "repeat", big), ("b2", "repeat", big)
            ),
            timeout=10,
        )
        assert response.ByteSize() <= 64 * 1024
        small, first, second = response.completed.results
        assert small.output == "ok"
        dropped = [result for result in (first, second) if result.is_error]
        assert len(dropped) == 1
        assert reason_of(dropped[0]) == "TOOL_INTERNAL"
        assert "was dropped" in dropped[0].error.message


@pytest.mark.parametrize(
    "form", [DefinitionFormat.OPENAI_CHAT, DefinitionFormat.ANTHROPIC, DefinitionFormat.GEMINI]
)
async def test_a_provider_message_over_the_limit_drops_its_largest_results(
    form: DefinitionFormat,
) -> None:
    """Each 30,000-character result fits a response; the message of all three does not,
    and quoting makes it larger than the results themselves."""
    async with batch_server(max_message_bytes=64 * 1024) as (_, stub, _tools):
        big = json.dumps({"text": '"', "times": 30_000})
        calls = [("small", "echo", '{"text": "ok"}'), ("b1", "repeat", big), ("b2", "repeat", big)]
        output = model_output(form, calls)
        reply = await stub.RunProviderToolCalls(
            pb.RunProviderToolCallsRequest(format=format_number(form), model_output_json=output),
            timeout=10,
        )
        assert reply.ByteSize() <= 64 * 1024
        text = reply.results_message_json
        assert text.count("was dropped") >= 1
        assert '"ok"' in json.dumps(result_for("small", json.loads(text)))
        assert len(text.encode()) > 30_000  # one big result stayed


def result_for(call_id: str, message: object) -> object:
    """The innermost object of a provider message that names ``call_id``."""
    if isinstance(message, list):
        items = cast("list[object]", message)
        return next((found for item in items if (found := result_for(call_id, item))), None)
    if not isinstance(message, dict):
        return None
    fields = cast("dict[str, object]", message)
    inner = result_for(call_id, list(fields.values()))
    return inner if inner is not None else (fields if call_id in fields.values() else None)


def model_output(form: DefinitionFormat, calls: list[tuple[str, str, str]]) -> str:
    """A model's turn calling ``calls`` (id, tool, input JSON) in ``form``."""
    if form is DefinitionFormat.OPENAI_CHAT:
        return json.dumps({
            "role": "assistant",
            "tool_calls": [
                {"id": id_, "type": "function", "function": {"name": name, "arguments": text}}
                for id_, name, text in calls
            ],
        })  # fmt: skip
    if form is DefinitionFormat.ANTHROPIC:
        return json.dumps([
            {"type": "tool_use", "id": id_, "name": name, "input": json.loads(text)}
            for id_, name, text in calls
        ])  # fmt: skip
    return json.dumps({
        "role": "model",
        "parts": [
            {"functionCall": {"id": id_, "name": name, "args": json.loads(text)}}
            for id_, name, text in calls
        ],
    })  # fmt: skip


async def test_the_listing_carries_titles_annotations_schemas_and_approval() -> None:
    async with (
        batch_server() as (served, _, _tools),
        await RemoteToolServerHandle.connect(served.target) as handle,
    ):
        delete = handle.get_tool("delete")
        whoami = handle.get_tool("whoami")
        assert delete is not None
        assert whoami is not None
        assert delete[0].requires_approval
        assert delete[0].annotations.destructive is True
        assert delete[0].annotations.read_only is None
        assert whoami[0].output_schema is not None
        local = served.app.registry.handle.definitions_snapshot()
        assert handle.definitions_snapshot().canonical_json == local.canonical_json
        structured = await whoami[1].execute("{}")
        assert not isinstance(structured, str)
        assert structured.structured is not None


async def test_metadata_values_stay_out_of_the_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    secret = "sk-live-0123456789"
    async with batch_server() as (_, stub, _tools):
        crash = pb.CallToolRequest(name="crash", input_json="{}", metadata={"token": secret})
        await failure(stub.CallTool(crash, timeout=10))
        await stub.CallTools(request(("c", "crash", "{}"), token=secret), timeout=10)
    assert "defect" in caplog.text  # the crash was logged...
    assert secret not in caplog.text  # ...without the metadata


async def test_tool_errors_from_a_remote_batch_are_the_same_variants() -> None:
    async with (
        batch_server() as (served, _, _tools),
        await RemoteToolServerHandle.connect(served.target) as handle,
    ):
        calls = [ToolCall("1", "echo", "{}"), ToolCall("2", "nope", "{}")]
        outcome = await handle.call_tools(calls)
        assert isinstance(outcome, Completed)
        invalid, missing = outcome.results
        assert isinstance(invalid.error, ToolError.InvalidArgument)
        assert isinstance(missing.error, ToolServerError.ToolNotFound)


async def test_an_edited_input_goes_through_the_pre_hooks_again() -> None:
    def no_etc(context: ToolCallContext) -> PreToolCallOutcome:
        return Abort("no /etc") if "/etc" in context.call.input_json else Continue()

    asked: list[str] = []

    def ask_once(context: ToolCallContext) -> PreToolCallOutcome:
        if context.call.id == "b" and "b" not in asked:
            asked.append("b")
            return Pause("check b")
        return Continue()

    tools = BatchTools()
    worker: Worker[Mutable] = Worker()
    worker.register_tools(tool_definitions(tools))
    worker.add_pre_tool_call_hook(no_etc)
    worker.add_pre_tool_call_hook(ask_once)
    calls = [ToolCall("a", "echo", '{"text": "x"}'), ToolCall("b", "echo", '{"text": "y"}')]
    for edited in ("a", "b"):
        asked.clear()
        paused = await worker.call_tools(calls)
        assert isinstance(paused, Paused)
        with pytest.raises(ToolBatchAborted, match="no /etc"):
            await worker.resume(paused, {edited: ApproveWithInput('{"text": "/etc/passwd"}')})
    assert tools.ran == 0


@pytest.mark.parametrize("state", ["memory", ""])  # "": the default SQLite store
async def test_held_bytes_count_every_call_of_a_paused_batch(state: str) -> None:
    async with batch_server(state=state) as (served, stub, _tools):
        store = served.app.tools.paused_batches
        store.max_bytes = 100_000
        unknown = [(f"u{i}", "n" * 1000, "x" * 2000) for i in range(40)]
        refused = await failure(stub.CallTools(request(("1", "delete", "{}"), *unknown)))
        assert refused.reason == "PAUSED_BATCHES_FULL"


async def test_a_resume_refused_for_load_keeps_its_token() -> None:
    async with batch_server(max_concurrent_calls=2) as (served, stub, tools):
        handle = await RemoteToolServerHandle.connect(served.target, call_timeout=10)
        async with handle:
            paused = await handle.call_tools(
                [ToolCall("1", "delete", '{"path": "/a"}'), ToolCall("2", "echo", '{"text": "x"}')]
            )
            assert isinstance(paused, Paused)
            busy = asyncio.ensure_future(
                stub.CallTool(pb.CallToolRequest(name="sleep", input_json='{"seconds": 0.5}'))
            )
            await asyncio.sleep(0.1)
            with pytest.raises(RemoteServiceError) as raised:
                await handle.resume(paused, {"1": Approve()})
            assert raised.value.reason == "CONCURRENCY_LIMIT"
            await busy
            with pytest.raises(RemoteServiceError) as raised:  # refused by the server...
                await handle.resume(paused, {"1": Deny("d" * 2000)})
            assert raised.value.reason == "INVALID_REQUEST"
            outcome = await handle.resume(paused, {"1": Approve()})  # ...still resumable
            assert isinstance(outcome, Completed)
            assert tools.deleted == ["/a"]


async def test_edits_cannot_grow_a_paused_batch_past_a_response() -> None:
    async with batch_server(max_message_bytes=64 * 1024) as (_, stub, _tools):
        paused = await stub.CallTools(request(("1", "delete", "{}"), ("2", "delete", "{}")))
        token = paused.paused.resume_token
        edit = pb.EditedApproval(input_json=json.dumps({"path": "p" * 40_000}))
        grow = pb.ResumeBatchRequest(
            resume_token=token, decisions=[pb.CallDecision(call_id="1", approve_with_input=edit)]
        )
        refused = await failure(stub.ResumeBatch(grow, timeout=10))
        assert refused.reason == "INVALID_REQUEST"
        again = await stub.ResumeBatch(pb.ResumeBatchRequest(resume_token=token), timeout=10)
        assert again.WhichOneof("outcome") == "paused"


async def test_a_held_batch_never_shows_its_secret() -> None:
    store = MemoryStore(60.0, 10)
    paused = Paused(
        object(), pending_calls=(), results=(), awaiting_approval=(),
        paused_call=ToolCall("1", "x", "{}"), reason="",
    )  # fmt: skip
    held = await store.hold(paused, {}, 10, form=None, owner="", resumed=False, replaces=None)
    assert held is not None
    token, record = held
    assert token.split(".")[2] not in repr(record)
    assert await store.find(token) is record
    assert await store.claim(record.batch_id, [])
    assert not await store.claim(record.batch_id, [])


async def test_a_tool_needing_approval_at_a_provider_runs_once_approved_upstream(
    tmp_path: Path,
) -> None:
    async with (
        batch_server() as (provider, _, provider_tools),
        serve(internal_socket=tmp_path / "r.sock", token="t") as main,
    ):
        found = provider.app.registry.handle.get_tool("delete")
        assert found is not None
        async with ToolRegistryClient(main.app.internal_target or "", "t") as registry:
            await registry.register_tool(found[0], provider.target)
        async with await RemoteToolServerHandle.connect(main.target) as handle:
            paused = await handle.call_tools([ToolCall("x", "delete", '{"path": "/p"}')])
            assert isinstance(paused, Paused)  # the main server asks the person
            outcome = await handle.resume(paused, {"x": Approve()})
            assert isinstance(outcome, Completed)
            assert outcome.results[0].content == "deleted /p"
    assert provider_tools.deleted == ["/p"]
