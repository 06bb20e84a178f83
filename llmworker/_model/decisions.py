"""What a person decided about a call of a paused batch: approve, deny, or approve edited.

>>> outcome = await worker.resume(paused, decisions={
...     "call-1": Approve(),
...     "call-2": Deny("not on a Friday"),
...     "call-3": ApproveWithInput('{"path": "/tmp/scratch"}'),
... })  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias, final

__all__ = ["Approve", "ApproveWithInput", "Decision", "Deny"]


@final
@dataclass(frozen=True, slots=True)
class Approve:
    """Run the call as it is."""


@final
@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run the call: its result is an error saying it was denied, and why."""

    reason: str = ""


@final
@dataclass(frozen=True, slots=True)
class ApproveWithInput:
    """Run the call with ``input_json`` instead of the input the model gave."""

    input_json: str


Decision: TypeAlias = Approve | Deny | ApproveWithInput
