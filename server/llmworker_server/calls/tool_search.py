"""SearchTools: the caller's tools ranked against a few words, for a model that cannot hold
thousands of definitions.

The index is SQLite's FTS5 in memory (the standard library's ``sqlite3``; no service, no
dependency): one row per tool with its name (also split into words: ``kv_delete`` and
``getWeather`` give ``kv delete`` and ``get weather``), title, description and parameter
names, ranked by BM25 with the name weighing most. Each query word also matches the words
it begins (``calc`` finds ``calculate``). The index follows the registry: at the first
search after a change, only the tools whose definition changed are written again.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from typing import Final

from llmworker import DefinitionFormat, ToolMeta
from llmworker._wire import (
    ErrorStatus,
    Reason,
    definition_format,
    definition_message,
    format_definitions,
)
from llmworker.v1 import tool_service_pb2 as pb

from ..registry.registry import Registry
from ..rpc.auth import CallerCheck, Scope
from ..rpc.handlers import Context, MalformedRequest, abort, abort_malformed

__all__ = ["ToolSearch"]

MAX_QUERY_CHARS: Final = 500
DEFAULT_LIMIT: Final = 10
MAX_LIMIT: Final = 100
_MAX_WORDS: Final = 32
_RANKED: Final = "SELECT name, rank FROM tools WHERE tools MATCH ? ORDER BY rank LIMIT ? OFFSET ?"
"""The best rows first (FTS5's rank: BM25 with the weights set below; lower is better)."""
_WORD: Final = re.compile(r"\w+")
_STOPWORDS: Final = frozenset({
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from",
    "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "please", "some", "that",
    "the", "this", "to", "what", "which", "with",
})  # fmt: skip
"""Words that say nothing about a tool (and, matched as prefixes, would match a lot)."""
_CAMEL: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class ToolSearch:
    """Answers SearchTools from an FTS5 index of ``registry``'s tools, each caller seeing
    the tools its token allows."""

    def __init__(self, registry: Registry, auth: CallerCheck | None = None) -> None:
        self._registry = registry
        self._auth = auth
        # used from the event loop's thread only; every statement takes well under a ms
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE tools USING fts5(name, title, description, parameters, "
            "tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4')"
        )
        # BM25 weights of name, title, description, parameters: a name match weighs most
        self._db.execute("INSERT INTO tools (tools, rank) VALUES ('rank', 'bm25(10, 4, 1, 2)')")
        self._indexed: dict[str, tuple[int, ToolMeta]] = {}
        self._rows = 0
        self._version: object = None

    async def search_tools(
        self, request: pb.SearchToolsRequest | MalformedRequest, context: Context
    ) -> pb.SearchToolsResponse:
        if isinstance(request, MalformedRequest):
            await abort_malformed(context, request)
        scope: Scope | None = None
        if self._auth is not None:
            caller = self._auth.caller(context)
            if isinstance(caller, ErrorStatus):
                await abort(context, caller)
            scope = caller.scope
        answer = self.search(request, scope)
        if isinstance(answer, ErrorStatus):
            await abort(context, answer)
        return answer

    def search(
        self, request: pb.SearchToolsRequest, scope: Scope | None
    ) -> pb.SearchToolsResponse | ErrorStatus:
        """The hits of ``request`` among the tools ``scope`` allows (None: every tool)."""
        problem = _request_problem(request)
        if problem is not None:
            return problem
        form: DefinitionFormat | None = None
        if request.format:
            try:
                form = definition_format(request.format)
            except ValueError as error:
                return ErrorStatus.of(Reason.INVALID_REQUEST, str(error))
        words = _WORD.findall(request.query.lower())
        words = [word for word in words if word not in _STOPWORDS][:_MAX_WORDS] or words[:1]
        if not words:
            return ErrorStatus.of(
                Reason.INVALID_REQUEST,
                "query has no words (letters or digits) to look for; describe the tool you "
                'need, e.g. "weather in a city"',
            )
        hits = list(self._ranked(words, scope, request.limit or DEFAULT_LIMIT))
        response = pb.SearchToolsResponse(
            definitions=[definition_message(meta) for meta, _ in hits],
            scores=[score for _, score in hits],
        )
        if form is not None:
            try:
                formatted = format_definitions([meta for meta, _ in hits], form)
            except ValueError as error:  # StrictSchemaError included
                return ErrorStatus.of(Reason.DEFINITION_FORMAT_UNSUPPORTED, str(error))
            response.definitions_json = formatted.json.decode()
        return response

    def _ranked(
        self, words: list[str], scope: Scope | None, limit: int
    ) -> Iterator[tuple[ToolMeta, float]]:
        """The best ``limit`` tools ``scope`` allows for ``words``, with their scores: those
        with every word when there are ``limit`` of them (ranking only those is far cheaper
        when many tools share a word), else those with any word."""
        self._follow_registry()
        terms = [f'"{word}"*' for word in words]  # \w+ words: no quote inside
        if len(terms) > 1:
            every = list(self._matches(" AND ".join(terms), scope, limit))
            if len(every) == limit:
                yield from every
                return
        yield from self._matches(" OR ".join(terms), scope, limit)

    def _matches(
        self, match: str, scope: Scope | None, limit: int
    ) -> Iterator[tuple[ToolMeta, float]]:
        """The best ``limit`` tools ``scope`` allows among those ``match`` finds."""
        found, window, offset = 0, limit if scope is None else max(limit * 20, 200), 0
        while True:  # a scope may hide hits: read on down the ranking, all of it at worst
            rows = self._db.execute(_RANKED, (match, window, offset)).fetchall()
            for row_name, rank in rows:
                name = str(row_name).partition(" ")[0]
                indexed = self._indexed.get(name)
                if indexed is None or (scope is not None and not scope.allows(name)):
                    continue
                yield indexed[1], -float(rank)
                found += 1
                if found >= limit:
                    return
            if len(rows) < window:
                return
            offset, window = offset + window, -1  # -1: no limit

    def _follow_registry(self) -> None:
        """Write again the rows of the tools that changed since the last search."""
        snapshot = self._registry.handle.definitions_snapshot()
        if snapshot is self._version:
            return
        current = {meta.name: meta for meta in snapshot.definitions}
        with self._db:
            for name in [name for name in self._indexed if name not in current]:
                rowid, _ = self._indexed.pop(name)
                self._db.execute("DELETE FROM tools WHERE rowid = ?", (rowid,))
            for name, meta in current.items():
                indexed = self._indexed.get(name)
                if indexed is not None and indexed[1] is meta:  # unchanged: the same object
                    continue
                if indexed is not None:
                    self._db.execute("DELETE FROM tools WHERE rowid = ?", (indexed[0],))
                self._rows += 1
                self._db.execute(
                    "INSERT INTO tools (rowid, name, title, description, parameters) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (self._rows, *_document(meta)),
                )
                self._indexed[name] = (self._rows, meta)
        self._version = snapshot


def _document(meta: ToolMeta) -> tuple[str, str, str, str]:
    """The indexed text of ``meta``: its name first (the hit's key), then its words."""
    properties = meta.input_schema.get("properties")
    names = [str(key) for key in properties] if isinstance(properties, dict) else []
    return (
        f"{meta.name} {_split(meta.name)}",
        meta.title,
        meta.description,
        " ".join(f"{name} {_split(name)}" for name in names),
    )


def _split(name: str) -> str:
    """``get_weather``, ``getWeather``, ``get-weather`` → ``get weather``."""
    return " ".join(_CAMEL.sub(" ", name).replace("_", " ").replace("-", " ").split())


def _request_problem(request: pb.SearchToolsRequest) -> ErrorStatus | None:
    query = request.query.strip()
    if not 0 < len(query) <= MAX_QUERY_CHARS:
        return ErrorStatus.of(
            Reason.INVALID_REQUEST,
            f"query must be 1-{MAX_QUERY_CHARS} characters (it is {len(query)}): a few words "
            'describing the tool you need, e.g. "weather in a city"',
        )
    if not 0 <= request.limit <= MAX_LIMIT:
        return ErrorStatus.of(
            Reason.INVALID_REQUEST,
            f"limit must be 0-{MAX_LIMIT} (0 means {DEFAULT_LIMIT}), not {request.limit}",
        )
    return None
