"""Error variants: reachable from their base, caught by it, with the spec's messages."""

from __future__ import annotations

import pytest

from llmworker import ToolError, ToolRegistryError, ToolServerError


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (ToolError.InvalidArgument("bad"), "Invalid argument: bad"),
        (ToolError.ExecutionFailed("boom"), "Execution failed: boom"),
        (ToolError.Internal("oops"), "Internal error: oops"),
        (ToolServerError.DuplicateName("x"), "Tool with name 'x' already registered"),
        (ToolServerError.ToolNotFound("x"), "Tool 'x' not found"),
        (
            ToolServerError.ToolExecution("Execution failed: boom"),
            "Tool execution failed: Execution failed: boom",
        ),
        (ToolRegistryError.DuplicateName("x"), "Tool with name 'x' already registered"),
    ],
)
def test_messages_read_exactly_as_the_spec_says(error: Exception, text: str) -> None:
    assert str(error) == text


def test_variants_are_caught_by_their_base_and_keep_their_payload() -> None:
    with pytest.raises(ToolError) as caught:
        raise ToolError.InvalidArgument("field 'q': required")
    assert isinstance(caught.value, ToolError.InvalidArgument)
    assert not isinstance(caught.value, ToolError.ExecutionFailed)
    assert caught.value.message == "field 'q': required"

    with pytest.raises(ToolServerError) as server_error:
        raise ToolServerError.ToolNotFound("search")
    assert isinstance(server_error.value, ToolServerError.ToolNotFound)
    assert server_error.value.name == "search"


def test_variants_name_themselves_like_the_enum() -> None:
    assert ToolError.InvalidArgument.__qualname__ == "ToolError.InvalidArgument"
    assert ToolServerError.ToolExecution.__qualname__ == "ToolServerError.ToolExecution"
    assert ToolRegistryError.DuplicateName.__qualname__ == "ToolRegistryError.DuplicateName"


def test_one_duplicate_name_class_answers_both_bases() -> None:
    from llmworker import Tool, ToolMeta, ToolOutput, ToolRegistryError, ToolServerError, Worker

    class Echo:
        async def execute(self, input_json: str) -> str | ToolOutput:
            return input_json

    def echo() -> tuple[ToolMeta, Tool]:
        return ToolMeta("echo"), Echo()

    assert ToolServerError.DuplicateName is ToolRegistryError.DuplicateName
    worker = Worker()
    worker.register_tool(echo)
    with pytest.raises(ToolRegistryError.DuplicateName) as caught:
        worker.register_tool(echo)
    assert isinstance(caught.value, ToolServerError)
    assert caught.value.name == "echo"
    assert str(caught.value) == "Tool with name 'echo' already registered"


def test_every_public_error_class_is_reachable_from_llmworker() -> None:
    import llmworker
    from llmworker._model import errors

    for name in errors.__all__:
        assert getattr(llmworker, name) is getattr(errors, name), name
