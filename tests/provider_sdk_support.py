"""What the provider-SDK tests share: golden files, exact validation against the SDKs'
TypedDicts, and workers holding the tool sets."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import pytest
from pydantic import BaseModel, TypeAdapter

from llmworker import DefinitionFormat, JsonValue, Mutable, Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.schema_zoo import MapZoo, RecursiveZoo, TupleZoo, Zoo

__all__ = [
    "ANTHROPIC",
    "CHAT",
    "GOLDEN",
    "RESPONSES",
    "TOOL_SETS",
    "check_golden",
    "check_golden_directory",
    "definitions",
    "exactly",
    "input_schemas",
    "no_extras",
    "worker_of",
]

CHAT: Final = (DefinitionFormat.OPENAI_CHAT, DefinitionFormat.OPENAI_CHAT_STRICT)
RESPONSES: Final = (DefinitionFormat.OPENAI_RESPONSES, DefinitionFormat.OPENAI_RESPONSES_STRICT)
ANTHROPIC: Final = (DefinitionFormat.ANTHROPIC, DefinitionFormat.ANTHROPIC_STRICT)
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE_VARIABLE = "LLMWORKER_UPDATE_GOLDEN"

TOOL_SETS: dict[str, Callable[[], object]] = {
    "demo": DemoTools,
    "zoo": Zoo,
    "recursive_zoo": RecursiveZoo,
    "tuple_zoo": TupleZoo,
    "map_zoo": MapZoo,
}


def worker_of(*tool_sets: str) -> Worker[Mutable]:
    """A worker with the tools of the named sets."""
    worker: Worker[Mutable] = Worker()
    for name in tool_sets:
        worker.register_tools(tool_definitions(TOOL_SETS[name]()))
    return worker


def definitions(tool_set: str, form: DefinitionFormat, *, cache_last: bool = False) -> Any:
    """The parsed definitions (Any: the tests index into provider shapes)."""
    handle = worker_of(tool_set).tool_server_handle()
    return json.loads(handle.definitions_for(form, cache_last=cache_last).json)


def input_schemas(tool_set: str, form: DefinitionFormat) -> dict[str, Any]:
    """Each tool's input schema as the format carries it, by tool name."""
    body = definitions(tool_set, form)
    if form is DefinitionFormat.GEMINI:
        declarations = body[0]["functionDeclarations"]
        return {entry["name"]: entry["parametersJsonSchema"] for entry in declarations}
    if form in CHAT:
        return {entry["function"]["name"]: entry["function"]["parameters"] for entry in body}
    key = "parameters" if form in RESPONSES else "input_schema"
    return {entry["name"]: entry[key] for entry in body}


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


REGENERATE = (
    f"{UPDATE_VARIABLE}=1 .venv/bin/pytest tests/library/test_provider_sdk_definitions.py "
    "tests/library/test_provider_sdk_messages.py"
)


def _updating() -> bool:
    return os.environ.get(UPDATE_VARIABLE) == "1"


def check_golden(relative: str, value: JsonValue) -> None:
    """Compare ``value`` with the golden file ``relative`` (parsed, so its formatting is
    free, but ``true`` is not ``1``); with LLMWORKER_UPDATE_GOLDEN=1, rewrite the file."""
    path = GOLDEN / relative
    if _updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_pretty(value), encoding="utf-8")
        return
    regenerate = REGENERATE
    if not path.exists():
        pytest.fail(f"golden file tests/golden/{relative} is missing; write it with {regenerate}")
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert _pretty(value) == _pretty(expected), (
        f"tests/golden/{relative} differs; if the change is intended, regenerate with "
        f"{regenerate} and review the diff"
    )


def check_golden_directory(directory: str, names: set[str]) -> None:
    """The golden ``directory`` holds exactly ``names``; with LLMWORKER_UPDATE_GOLDEN=1,
    delete the others."""
    folder = GOLDEN / directory
    present: set[str] = {path.name for path in folder.iterdir()} if folder.exists() else set()
    if _updating():
        for stale in present - names:
            (folder / stale).unlink()
        return
    assert present == names, (
        f"tests/golden/{directory}: stale {sorted(present - names)}, missing "
        f"{sorted(names - present)}; regenerate with {REGENERATE}"
    )


def _materialized(value: object) -> object:
    """``value`` with the lazy iterators pydantic returns for ``Iterable`` fields turned into
    lists (which validates their items)."""
    if isinstance(value, Mapping):
        items: Mapping[object, object] = value  # pyright: ignore[reportUnknownVariableType]
        return {key: _materialized(item) for key, item in items.items()}
    if isinstance(value, str | bytes | BaseModel) or not isinstance(value, Iterable):
        return value
    members: Iterable[object] = value  # pyright: ignore[reportUnknownVariableType]
    return [_materialized(item) for item in members]


def exactly(kind: type[object], value: object) -> None:
    """``value`` validates as the SDK type ``kind`` (a TypedDict or a union of them) and
    keeps every key: pydantic drops the keys a TypedDict does not declare, so a key the SDK
    does not know shows as a difference."""
    adapter = TypeAdapter[Any](kind)  # alive while the lazy iterators run, or pydantic-core
    validated = _materialized(adapter.validate_python(value))  # panics on their $refs
    assert validated == value, f"{kind!r} dropped or changed keys"


def no_extras(model: object, path: str = "$") -> None:
    """No part of a parsed SDK model holds fields the SDK does not declare (the OpenAI and
    Anthropic models accept unknown fields and keep them aside)."""
    if isinstance(model, BaseModel):
        assert not model.model_extra, f"{path}: fields the SDK does not know: {model.model_extra}"
        for name in type(model).model_fields:
            no_extras(getattr(model, name), f"{path}.{name}")
    elif isinstance(model, list | tuple):
        items: list[object] | tuple[object, ...] = model  # pyright: ignore[reportUnknownVariableType]
        for index, item in enumerate(items):
            no_extras(item, f"{path}[{index}]")
