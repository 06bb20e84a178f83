"""The registry's definitions sorted by name, and their fingerprint kept up to date cheaply.

The fingerprint is the SHA-256 of the canonical JSON array of the sorted definitions, so a
registration changes it everywhere after the new name. Rehashing the whole array per
registration made registering n tools one by one O(n²) (10,000 tools: minutes). Instead
each definition's JSON is encoded once, and the hash state is kept at a checkpoint every
``CHECKPOINT_EVERY`` definitions: a change rehashes only from the checkpoint before it, and
registering in name order (what providers do) costs the same at any registry size.
"""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, final

from .json_values import canonical_json
from .tool_meta import ToolMeta

if TYPE_CHECKING:
    from _hashlib import HASH

__all__ = ["CHECKPOINT_EVERY", "DefinitionsSnapshot", "SortedDefinitions"]

CHECKPOINT_EVERY: Final = 32


@final
@dataclass(frozen=True, slots=True)
class DefinitionsSnapshot:
    """The sorted definitions of one registry version, serialised once.

    ``canonical_json`` is a JSON array of ``{"name", "description", "input_schema"}`` objects
    in canonical form; ``fingerprint`` is its SHA-256 in hex.
    """

    definitions: tuple[ToolMeta, ...]
    canonical_json: bytes
    fingerprint: str


class SortedDefinitions:
    """Metas sorted by name with their canonical JSON, a lazy snapshot and fingerprint."""

    __slots__ = ("_encoded", "_fingerprint", "_metas", "_names", "_snapshot", "_states")

    def __init__(self) -> None:
        self._names: list[str] = []
        self._metas: list[ToolMeta] = []
        self._encoded: list[bytes] = []
        # _states[j]: the hash of "[" and the first j * CHECKPOINT_EVERY definitions.
        self._states: list[HASH] = [hashlib.sha256(b"[")]
        self._fingerprint: str | None = None
        self._snapshot: DefinitionsSnapshot | None = None

    def __len__(self) -> int:
        return len(self._names)

    def put(self, meta: ToolMeta) -> None:
        """Add ``meta``, or replace the meta of the same name."""
        index = bisect.bisect_left(self._names, meta.name)
        encoded = canonical_json(meta.to_json_object())
        if index < len(self._names) and self._names[index] == meta.name:
            self._metas[index], self._encoded[index] = meta, encoded
        else:
            self._names.insert(index, meta.name)
            self._metas.insert(index, meta)
            self._encoded.insert(index, encoded)
        self._changed_from(index)

    def remove(self, name: str) -> None:
        """Drop the meta named ``name`` (which must be present)."""
        index = bisect.bisect_left(self._names, name)
        del self._names[index], self._metas[index], self._encoded[index]
        self._changed_from(index)

    def sorted_metas(self) -> tuple[ToolMeta, ...]:
        return self.snapshot().definitions

    def fingerprint(self) -> str:
        """The SHA-256 of the canonical JSON array, rehashed from the last good checkpoint."""
        if self._fingerprint is None:
            step = CHECKPOINT_EVERY
            state = self._states[-1].copy()
            done = (len(self._states) - 1) * step
            encoded = self._encoded
            while done < len(encoded):
                upto = min(done + step, len(encoded))
                state.update((b"," if done else b"") + b",".join(encoded[done:upto]))
                done = upto
                if done % step == 0:
                    self._states.append(state.copy())
            state.update(b"]")
            self._fingerprint = state.hexdigest()
        return self._fingerprint

    def snapshot(self) -> DefinitionsSnapshot:
        """The sorted metas, their canonical JSON and fingerprint, built once per change."""
        if self._snapshot is None:
            body = b"[" + b",".join(self._encoded) + b"]"
            self._snapshot = DefinitionsSnapshot(tuple(self._metas), body, self.fingerprint())
        return self._snapshot

    def _changed_from(self, index: int) -> None:
        del self._states[index // CHECKPOINT_EVERY + 1 :]
        self._fingerprint = None
        self._snapshot = None
