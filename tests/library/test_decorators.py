"""@tool_registry / @tool / description: generated classes, meta, execution, mistakes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from llmworker import (
    Completed,
    ToolCall,
    ToolError,
    ToolFactory,
    Worker,
    definition_of,
    description,
    tool,
    tool_registry,
)
from tests.support import text_of


class Profile(BaseModel):
    name: str
    age: int


@dataclasses.dataclass
class Pair:
    left: int
    right: int


@tool_registry
class MyApp:
    def __init__(self) -> None:
        self.searches = 0

    @tool
    async def search(
        self,
        query: Annotated[str, description("search query string")],
        limit: Annotated[int, Field(ge=1, le=50, description="how many")] = 10,
    ) -> str:
        """Run a search.

        Searches the database with the given query."""
        self.searches += 1
        return f"Results for: {query} (limit {limit}, search #{self.searches})"

    @tool
    def get_user(self, user_id: int) -> Profile:
        return Profile(name=f"user{user_id}", age=30 + user_id)

    @tool
    async def no_docstring(self) -> None:
        return None

    @tool
    def fail(self, kind: str) -> str:
        if kind == "tool-error":
            raise ToolError.InvalidArgument("kind must be friendly")
        if kind == "validation":
            Profile.model_validate({"name": "x"})
        raise RuntimeError(f"broke on {kind}")

    @tool
    def shapes(self, kind: str) -> object:
        return {
            "dict": {"a": [1, 2]},
            "list": [1, "two", None],
            "int": 7,
            "bool": True,
            "model": Profile(name="n", age=1),
            "dataclass": Pair(1, 2),
            "none": None,
            "set": {object()},
        }[kind]


async def run(factory: ToolFactory, arguments: str) -> str:
    _, tool_instance = factory()
    return text_of(await tool_instance.execute(arguments))


def test_generated_classes_are_attributes_with_pascal_case_names() -> None:
    # Pyright cannot see generated attributes (mypy can, with llmworker.mypy): use getattr.
    names = ["SearchArgs", "GetUserArgs", "ToolGetUser", "ToolSearch", "get_user_definition"]
    generated = {name: getattr(MyApp, name) for name in names}
    assert generated["SearchArgs"].__name__ == "SearchArgs"
    assert generated["GetUserArgs"].__qualname__ == "MyApp.GetUserArgs"
    assert generated["ToolGetUser"].__qualname__ == "MyApp.ToolGetUser"
    assert generated["ToolSearch"].__name__ == "ToolSearch"
    app = MyApp()
    meta, instance = generated["get_user_definition"](app)()
    assert issubclass(generated["GetUserArgs"], BaseModel)
    assert getattr(MyApp, names[1]) is generated["GetUserArgs"], "built once, then kept"
    assert isinstance(instance, generated["ToolGetUser"])
    assert meta == app.get_user.definition().meta
    assert meta.name == "get_user"


def test_meta_takes_the_method_name_and_the_cleaned_docstring() -> None:
    app = MyApp()
    assert app.search.definition().meta.description == (
        "Run a search.\n\nSearches the database with the given query."
    )
    assert app.no_docstring.definition().meta.description == "Tool: no_docstring"


def test_description_and_field_metadata_reach_the_schema() -> None:
    assert MyApp().search.definition().meta.input_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "query": {"type": "string", "description": "search query string"},
            "limit": {
                "type": "integer",
                "description": "how many",
                "minimum": 1,
                "maximum": 50,
                "default": 10,
            },
        },
        "required": ["query"],
    }


async def test_a_tool_without_arguments_has_an_empty_object_schema() -> None:
    definition = MyApp().no_docstring.definition()
    assert definition.meta.input_schema == {
        "type": "object",
        "additionalProperties": False,
        "properties": {},
    }
    assert await run(definition, "{}") == ""
    with pytest.raises(ToolError.InvalidArgument, match="must be a JSON object, got an array"):
        await run(definition, "[]")


NOT_JSON = "input is not valid JSON"
ONE_OBJECT = "send one JSON object"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{not json", f"{NOT_JSON} (key must be a string at line 1 column 2); {ONE_OBJECT}"),
        ("", f"{NOT_JSON} (EOF while parsing a value at line 1 column 0); {ONE_OBJECT}"),
        ('"text"', "arguments must be a JSON object, got a string"),
        ("[1, 2]", "arguments must be a JSON object, got an array"),
        ("null", "arguments must be a JSON object, got null"),
        ("{}", "query: Field required"),
        ('{"query": 5}', "query: Input should be a valid string (got 5)"),
        ('{"query": "q", "limit": 0}', "limit: Input should be greater than or equal to 1 (got 0)"),
        ('{"query": "q", "lmit": 3}', "lmit: unknown field; remove it"),
        ('{"limit": "x"}', "query: Field required; limit: Input should be a valid integer, "
                           "unable to parse string as an integer (got 'x')"),
    ],
)  # fmt: skip
async def test_invalid_arguments_give_one_readable_line(arguments: str, message: str) -> None:
    with pytest.raises(ToolError.InvalidArgument) as caught:
        await run(MyApp().search.definition(), arguments)
    assert caught.value.message == message
    assert "\n" not in str(caught.value)


async def test_null_for_an_argument_with_a_default_selects_the_default() -> None:
    result = await run(MyApp().search.definition(), '{"query": "q", "limit": null}')
    assert result == "Results for: q (limit 10, search #1)"


@tool_registry
class Collector:
    @tool
    async def collect(self, owner: Profile | None = None, tags: list[str] = []) -> str:  # noqa: B006
        tags.append("seen")
        return f"{owner.name if owner else '-'}: {tags}"


async def test_arguments_reach_the_method_as_models_and_fresh_defaults() -> None:
    definition = Collector().collect.definition()
    assert await run(definition, "{}") == "-: ['seen']"
    assert await run(definition, '{"tags": null}') == "-: ['seen']"
    assert await run(definition, '{"owner": {"name": "ann", "age": 3}}') == "ann: ['seen']"
    with pytest.raises(ToolError.InvalidArgument) as caught:
        await run(definition, '{"owner": {"name": "ann", "age": "old"}}')
    assert caught.value.message == (
        "owner.age: Input should be a valid integer, unable to parse string as an integer "
        "(got 'old')"
    )


@pytest.mark.parametrize(
    ("kind", "error_type", "text"),
    [
        ("tool-error", ToolError.InvalidArgument, "Invalid argument: kind must be friendly"),
        ("disk", ToolError.ExecutionFailed, "Execution failed: broke on disk"),
        (
            "validation",
            ToolError.ExecutionFailed,
            "Execution failed: 1 validation error for Profile",
        ),
    ],
)
async def test_errors_from_the_body_are_execution_failures_unless_tool_errors(
    kind: str, error_type: type[ToolError], text: str
) -> None:
    with pytest.raises(error_type) as caught:
        await run(MyApp().fail.definition(), json.dumps({"kind": kind}))
    assert str(caught.value).startswith(text)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("dict", '{"a":[1,2]}'),
        ("list", '[1,"two",null]'),
        ("int", "7"),
        ("bool", "true"),
        ("model", '{"name":"n","age":1}'),
        ("dataclass", '{"left":1,"right":2}'),
        ("none", ""),
    ],
)
async def test_return_values_become_compact_json_text(kind: str, text: str) -> None:
    assert await run(MyApp().shapes.definition(), json.dumps({"kind": kind})) == text


async def test_an_unserialisable_return_value_is_an_internal_error() -> None:
    with pytest.raises(ToolError.Internal, match="returned set, which cannot be serialised"):
        await run(MyApp().shapes.definition(), '{"kind": "set"}')


async def test_state_on_the_instance_is_shared_and_the_method_still_works() -> None:
    app = MyApp()
    worker = Worker()
    worker.register_tools([app.search.definition(), definition_of(app.get_user)])
    outcome = await worker.lock().call_tools(
        [ToolCall("1", "search", '{"query": "a"}'), ToolCall("2", "get_user", '{"user_id": 2}')]
    )
    assert isinstance(outcome, Completed)
    assert [result.content for result in outcome.results] == [
        "Results for: a (limit 10, search #1)",
        '{"name":"user2","age":32}',
    ]
    assert await app.search("b", limit=3) == "Results for: b (limit 3, search #2)"
    assert app.get_user(1) == Profile(name="user1", age=31)
    assert await MyApp.search(app, "c") == "Results for: c (limit 10, search #3)"
    assert app.search.definition().meta == app.search.definition().meta


async def test_a_sync_tool_does_not_block_the_event_loop() -> None:
    @tool_registry
    class Mixed:
        @tool
        def slow(self) -> str:
            time.sleep(0.5)
            return "slow done"

        @tool
        async def quick(self, n: int) -> int:
            return n

    app = Mixed()
    _, slow = app.slow.definition()()
    _, quick = app.quick.definition()()
    slow_call = asyncio.create_task(slow.execute("{}"))
    await asyncio.sleep(0.01)
    answered: list[str] = []
    for index in range(20):
        answered.append(text_of(await quick.execute(json.dumps({"n": index}))))
    assert not slow_call.done(), "the 20 quick calls should finish while the slow one sleeps"
    assert answered == [str(index) for index in range(20)]
    assert await slow_call == "slow done"


def define_class(parameters: str, extra: str = "") -> None:
    """Run a class body with one @tool method taking ``parameters``; exec lets the test
    write what type checkers reject."""
    source = (
        "@tool_registry\nclass Broken:\n"
        f"    @tool\n    def collect({parameters}) -> str:\n        return ''\n{extra}"
    )
    exec(source, {"tool": tool, "tool_registry": tool_registry})


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ("self, key", "Broken.collect: parameter 'key' has no type annotation; annotate it"),
        (
            "self, *names: str",
            r"Broken.collect: \*names / \*\*names cannot be described to a model",
        ),
        ("self, **options: str", r"Broken.collect: \*options / \*\*options cannot be described"),
        ("self, key: str, /", "Broken.collect: parameter 'key' is positional-only"),
        ("", "Broken.collect: a tool method takes self as its first parameter"),
    ],
)
def test_signature_mistakes_fail_at_decoration_naming_the_method(
    parameters: str, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        define_class(parameters)


def test_two_tools_with_one_name_fail_at_decoration() -> None:
    second = "    @tool\n    def collect(self) -> str:\n        return ''\n"
    with pytest.raises(TypeError, match=r"Broken.collect: this class already has a tool named"):
        define_class("self", second)


def test_a_tool_outside_a_class_fails_at_decoration() -> None:
    def helper(self: object) -> str:
        return ""

    with pytest.raises(TypeError, match=r"@tool marks methods of a @tool_registry class"):
        tool(helper)


def test_a_tool_in_a_class_without_tool_registry_says_what_to_add() -> None:
    class Forgotten:
        @tool
        def ping(self) -> str:
            return "pong"

    with pytest.raises(TypeError, match=r"not decorated with @tool_registry; add @tool_registry"):
        Forgotten().ping.definition()


def test_a_generated_name_clash_fails_at_decoration() -> None:
    with pytest.raises(TypeError, match=r"'ping_definition' is already defined"):

        @tool_registry
        class Clash:
            @tool
            def ping(self) -> str:
                return "pong"

            def ping_definition(self) -> str:
                return ""
