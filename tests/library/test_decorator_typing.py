"""What type checkers see of decorated tools and ``tool_definitions``: mypy with llmworker.mypy,
and pyright."""

from __future__ import annotations

from pathlib import Path

import pytest

from llmworker import tool, tool_definitions, tool_registry
from tests.typecheck import mypy_errors, pyright_errors

APP = """\
from typing import Annotated
from llmworker import Worker, definition_of, description, tool, tool_registry

@tool_registry
class MyApp:
    @tool
    async def search(self, query: Annotated[str, description("search query string")]) -> str:
        '''Run a search.'''
        return f"Results for: {query}"

    @tool
    def get_user(self, user_id: int) -> str:
        return str(user_id)

app = MyApp()
worker = Worker()
"""

MYPY_FLOW = (
    APP
    + """\
worker.register_tool(app.search_definition())
worker.register_tools([app.search_definition(), app.get_user_definition()])
args: type[object] = MyApp.SearchArgs
"""
)

PORTABLE_FLOW = (
    APP
    + """\
worker.register_tool(app.search.definition())
worker.register_tool(definition_of(app.get_user))

async def use() -> str:
    text: str = await app.search("x")
    return text + app.get_user(5)
"""
)


def mypy_with_plugin(tmp_path: Path, source: str) -> list[str]:
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = llmworker.mypy\n")
    return mypy_errors(tmp_path, source, "--config-file", str(tmp_path / "mypy.ini"))


def test_mypy_with_the_plugin_accepts_the_generated_definition_methods(tmp_path: Path) -> None:
    assert mypy_with_plugin(tmp_path, MYPY_FLOW) == []


def test_mypy_with_the_plugin_rejects_a_misspelt_definition_method(tmp_path: Path) -> None:
    source = APP + "app.serch_definition()\n"
    assert mypy_with_plugin(tmp_path, source) == [
        '17: "MyApp" has no attribute "serch_definition"; maybe "search_definition" or '
        '"get_user_definition"?  [attr-defined]'
    ]


def test_the_plugin_handles_decorators_called_with_options(tmp_path: Path) -> None:
    source = """\
from llmworker import SchemaStyle, Worker, tool, tool_registry

@tool_registry(schema_style=SchemaStyle.INLINE)
class App:
    @tool(schema_style=SchemaStyle.OPENAI_STRICT)
    def get_user(self, user_id: int) -> str:
        return str(user_id)

Worker().register_tool(App().get_user_definition())
App().get_usr_definition()
"""
    assert mypy_with_plugin(tmp_path, source) == [
        '10: "App" has no attribute "get_usr_definition"; maybe "get_user_definition"?  '
        "[attr-defined]"
    ]


def test_mypy_keeps_the_method_signature(tmp_path: Path) -> None:
    source = PORTABLE_FLOW + "app.get_user('five')\n"
    assert mypy_with_plugin(tmp_path, source) == [
        '23: Argument 1 to "__call__" of "BoundToolMethod" has incompatible type "str"; '
        'expected "int"  [arg-type]'
    ]


def test_both_checkers_accept_the_portable_flow(tmp_path: Path) -> None:
    assert mypy_with_plugin(tmp_path, PORTABLE_FLOW) == []
    assert pyright_errors(tmp_path, PORTABLE_FLOW) == []


def test_pyright_rejects_a_wrong_argument_type(tmp_path: Path) -> None:
    errors = pyright_errors(tmp_path, PORTABLE_FLOW + "app.get_user('five')\n")
    assert errors == [
        "23: reportArgumentType: Argument of type \"Literal['five']\" cannot be assigned to "
        'parameter "user_id" of type "int" in function "__call__"'
    ]


def test_both_checkers_reject_tool_definitions_of_the_class(tmp_path: Path) -> None:
    source = (
        APP
        + """\
from llmworker import tool_definitions

def made(kind: type[MyApp]) -> MyApp:
    return kind()

worker.register_tools(tool_definitions(app))
worker.register_tools(tool_definitions(made(MyApp)))
worker.register_tool(definition_of(app.get_user))
worker.register_tools(tool_definitions(MyApp))
"""
    )
    assert mypy_with_plugin(tmp_path, source) == [
        "25: tool_definitions takes an instance, not a class; pass MyApp()  [arg-type]"
    ]
    assert pyright_errors(tmp_path, source) == [
        '25: reportDeprecated: The function "tool_definitions" is deprecated'
    ]


def test_tool_definitions_of_the_class_says_to_pass_an_instance() -> None:
    @tool_registry
    class Lookup:
        @tool
        def find(self, key: str) -> str:
            return key

    with pytest.raises(TypeError, match=r"not the class .*Lookup; pass Lookup\(\)$"):
        tool_definitions(Lookup)  # type: ignore[arg-type]  # pyright: ignore[reportDeprecated]
