"""ToolServer and ToolServerHandle: the shared map of tools, and how to reach it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, final

from .._formats.definition_formats import DefinitionFormat, FormattedDefinitions, format_definitions
from .._model.definitions import DefinitionsSnapshot, SortedDefinitions
from .._model.errors import ToolError, ToolServerError
from .._model.tool import Tool, ToolDefinition, declared_meta
from .._model.tool_meta import ToolMeta
from .context import ToolContext
from .execution import execute_tool

__all__ = [
    "DefinitionsSnapshot",
    "ToolServer",
    "ToolServerHandle",
]


class _Entry(NamedTuple):
    """A registered tool; as a tuple it is what ``get_tool`` returns, with no copy per call."""

    meta: ToolMeta
    tool: Tool


class _Registry:
    """The one map every handle shares, and its definitions sorted by name."""

    __slots__ = ("entries", "formatted", "sorted")

    def __init__(self) -> None:
        self.entries: dict[str, _Entry] = {}
        self.sorted: SortedDefinitions = SortedDefinitions()
        # Per format: the snapshot it was built from, and the formatted definitions.
        self.formatted: dict[
            tuple[DefinitionFormat, bool],
            tuple[DefinitionsSnapshot, FormattedDefinitions | ValueError],
        ] = {}

    def put(self, entry: _Entry) -> None:
        self.entries[entry.meta.name] = entry
        self.sorted.put(entry.meta)

    def remove(self, name: str) -> _Entry | None:
        entry = self.entries.pop(name, None)
        if entry is not None:
            self.sorted.remove(name)
        return entry


@final
class ToolServer:
    """Owns the tool map. Hand out ``handle()``s; register through a ``Worker``."""

    __slots__ = ("_registry",)

    def __init__(self) -> None:
        self._registry = _Registry()

    def handle(self) -> ToolServerHandle:
        """A new handle onto this server's map."""
        return ToolServerHandle(self._registry)


@final
class ToolServerHandle:
    """A cheap reference to a ToolServer's map; copies share it.

    Public methods look up and call tools (for hooks and applications). Registration methods
    are underscored: only the Worker calls them, so the Worker's lock governs the registry.
    """

    __slots__ = ("_registry",)

    def __init__(self, registry: _Registry) -> None:
        self._registry = registry

    def copy(self) -> ToolServerHandle:
        """Another handle onto the same map."""
        return ToolServerHandle(self._registry)

    __copy__ = copy

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolServerHandle):
            return NotImplemented
        return self._registry is other._registry

    def __hash__(self) -> int:
        return id(self._registry)

    def get_tool(self, name: str) -> tuple[ToolMeta, Tool] | None:
        """The meta and live instance registered under ``name``, or None."""
        return self._registry.entries.get(name)

    async def call_tool(self, name: str, input_json: str) -> str:
        """Run the tool ``name`` on ``input_json``.

        Raises ``ToolServerError.ToolNotFound``, or ``ToolServerError.ToolExecution`` carrying
        the text of the tool's ``ToolError`` (which is chained as ``__cause__``).
        """
        entry = self._registry.entries.get(name)
        if entry is None:
            raise ToolServerError.ToolNotFound(name)
        try:
            result = await execute_tool(entry.tool, input_json, ToolContext("", name))
        except ToolError as error:
            raise ToolServerError.ToolExecution(str(error)) from error
        return result if isinstance(result, str) else result.text

    def tool_definitions_sorted(self) -> tuple[ToolMeta, ...]:
        """Every registered meta, sorted by name (deterministic LLM requests)."""
        return self._registry.sorted.sorted_metas()

    def definitions_snapshot(self) -> DefinitionsSnapshot:
        """The sorted definitions with their canonical JSON and fingerprint, cached per change."""
        return self._registry.sorted.snapshot()

    def definitions_for(
        self, form: DefinitionFormat, *, cache_last: bool = False
    ) -> FormattedDefinitions:
        """The sorted definitions in a provider's shape (see ``DefinitionFormat``), built
        once per registry change. ``StrictSchemaError`` names a tool whose schema a strict
        format cannot take, ``ValueError`` a name the provider refuses (also once per
        change: asking again costs nothing)."""
        snapshot = self.definitions_snapshot()
        key = (form, cache_last)
        cached = self._registry.formatted.get(key)
        if cached is None or cached[0] is not snapshot:
            result: FormattedDefinitions | ValueError
            try:
                result = format_definitions(snapshot.definitions, form, cache_last=cache_last)
            except ValueError as error:
                result = error
            cached = self._registry.formatted[key] = (snapshot, result)
        if isinstance(cached[1], ValueError):
            raise cached[1].with_traceback(None)  # a fresh traceback: it would grow per raise
        return cached[1]

    def definitions_fingerprint(self) -> str:
        """The snapshot's fingerprint, kept up to date without building the snapshot: after
        one registration it costs a hash of the definitions from the new one on."""
        return self._registry.sorted.fingerprint()

    def __len__(self) -> int:
        return len(self._registry.entries)

    def __contains__(self, name: object) -> bool:
        return name in self._registry.entries

    def _register_tools(self, definitions: Iterable[ToolDefinition]) -> list[ToolMeta]:
        """Register all of ``definitions`` or none of them.

        Names that definitions declare (``ToolFactory``) are checked before any factory
        runs; other factories must run to reveal their names. A factory's own exception
        propagates, and nothing is registered.
        """
        batch = list(definitions)
        self._check_new_names(meta.name for meta in map(declared_meta, batch) if meta is not None)
        created = [_create(definition) for definition in batch]
        self._check_new_names(entry.meta.name for entry in created)
        for entry in created:
            self._registry.put(entry)
        return [entry.meta for entry in created]

    def _check_new_names(self, names: Iterable[str]) -> None:
        seen: set[str] = set()
        for name in names:
            if name in self._registry.entries or name in seen:
                raise ToolServerError.DuplicateName(name)
            seen.add(name)

    def _unregister_tool(self, name: str) -> ToolMeta:
        entry = self._registry.remove(name)
        if entry is None:
            raise ToolServerError.ToolNotFound(name)
        return entry.meta

    def _replace_tool(self, definition: ToolDefinition) -> ToolMeta:
        entry = _create(definition)
        if entry.meta.name not in self._registry.entries:
            raise ToolServerError.ToolNotFound(entry.meta.name)
        self._registry.put(entry)
        return entry.meta


def _create(definition: ToolDefinition) -> _Entry:
    meta, tool = definition()
    if not isinstance(meta, ToolMeta):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(
            f"tool definition {definition!r} returned {type(meta).__name__} as its meta; "
            "a ToolDefinition must return (ToolMeta, Tool)"
        )
    if not isinstance(tool, Tool):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(
            f"tool definition for '{meta.name}' returned {type(tool).__name__}, which has no "
            "async execute(input_json) method; a ToolDefinition must return (ToolMeta, Tool)"
        )
    return _Entry(meta, tool)
