"""``ToolContext``'s questions and log lines in the library: a direct call cannot be
answered (``ClientCannotAnswer``), and a ``ClientChannel`` installed around the call answers
them, by the keys asked (the same question, the same key)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from llmworker import (
    Answer,
    ClientCannotAnswer,
    Elicit,
    Elicited,
    JsonValue,
    ListRoots,
    LogLevel,
    Mutable,
    Question,
    Root,
    Roots,
    Sample,
    Sampled,
    ToolContext,
    ToolServerError,
    Worker,
    client_channel,
    tool,
    tool_definitions,
    tool_registry,
)

FORM: dict[str, JsonValue] = {"type": "object", "properties": {"name": {"type": "string"}}}


@tool_registry
class Asking:
    @tool
    async def greet(self, context: ToolContext) -> str:
        """Asks a name twice (the same question: one key)."""
        first = await context.elicit("Name?", FORM)
        again = await context.elicit("Name?", FORM)
        assert first == again
        return f"Hello, {first.content['name']}"

    @tool
    async def everything(self, context: ToolContext) -> str:
        """Samples, lists roots, logs."""
        context.log("info", "starting", {"n": 1})
        text = (await context.sample("Hi?", max_tokens=3)).text
        roots = await context.list_roots()
        return f"{text} {roots[0].uri} {context.can_ask(Elicit)} {context.can_ask(Sample)}"


class Channel:
    """Answers "Ada", "Paris" and one root; keeps the keys asked and the log lines."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.lines: list[tuple[LogLevel, str, JsonValue]] = []

    def can_answer(self, capability: str) -> bool:
        return capability != "elicitation"

    async def ask(self, questions: Mapping[str, Question]) -> Mapping[str, Answer]:
        answers: dict[str, Answer] = {}
        for key, question in questions.items():
            self.keys.append(key)
            if isinstance(question, Elicit):
                answers[key] = Elicited("accept", {"name": "Ada"})
            elif isinstance(question, Sample):
                answers[key] = Sampled("Paris", "m")
            else:
                assert isinstance(question, ListRoots)
                answers[key] = Roots((Root("file:///w"),))
        return answers

    def log(self, level: LogLevel, message: str, data: JsonValue) -> None:
        self.lines.append((level, message, data))


def worker() -> Worker[Mutable]:
    made: Worker[Mutable] = Worker()
    made.register_tools(tool_definitions(Asking()))
    return made


async def test_a_direct_call_cannot_be_answered_and_says_so() -> None:
    with pytest.raises(ToolServerError.ToolExecution) as failed:
        await worker().call_tool("greet", "{}")
    assert "cannot answer" in str(failed.value)
    assert "elicitation" in str(failed.value)


async def test_a_channel_around_the_call_answers_by_key() -> None:
    channel = Channel()
    made = worker()
    with client_channel(channel):
        assert await made.call_tool("greet", "{}") == "Hello, Ada"
        assert await made.call_tool("everything", "{}") == "Paris file:///w False True"
    assert channel.keys[0] == channel.keys[1]  # the same question, the same key
    assert len(set(channel.keys)) == 3
    assert channel.lines == [("info", "starting", {"n": 1})]


async def test_a_tool_may_catch_the_refusal() -> None:
    @tool_registry
    class Careful:
        @tool
        async def careful(self, context: ToolContext) -> str:
            """Falls back when nobody can answer."""
            assert not context.can_ask(ListRoots)
            try:
                await context.list_roots()
            except ClientCannotAnswer as error:
                return f"no {error.capability}"
            return "asked"

    made: Worker[Mutable] = Worker()
    made.register_tools(tool_definitions(Careful()))
    assert await made.call_tool("careful", "{}") == "no roots"
