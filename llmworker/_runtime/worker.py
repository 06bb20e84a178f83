"""Worker: registers tools while ``Mutable``, runs tool calls in every state.

The state is a type parameter. ``Worker()`` is a ``Worker[Mutable]``; ``lock()`` consumes it
and returns a ``Worker[Locked]``, on which mypy and pyright reject ``register_tool`` and the
other registry changes (and the run time refuses them too). Like a Rust move, a worker that
``lock()`` or ``unlock()`` consumed refuses any further use.

>>> worker = Worker()
>>> worker.register_tool(definition)  # doctest: +SKIP
>>> locked = worker.lock()
>>> outcome = await locked.call_tools([ToolCall("1", "echo", '{"text": "hi"}')])  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Coroutine, Iterable, Mapping, Sequence
from typing import Generic, TypeVar, cast, final

from .._model.calls import NO_METADATA, ToolCall
from .._model.decisions import Decision
from .._model.errors import WorkerStateError
from .._model.outcomes import BatchOutcome, Paused
from .._model.tool import ToolDefinition, ToolOutput
from .._model.tool_meta import ToolMeta
from .batch import HookChains, resume_batch, run_batch, run_one_call
from .batch_state import load_paused, save_paused, unnamed_hooks
from .hooks import PostToolCallHook, PreToolCallHook
from .stream_call import stream_one_call
from .streaming import StreamEvent
from .tool_server import ToolServer, ToolServerHandle

__all__ = ["Locked", "Mutable", "Worker"]


class _State:
    """A Worker state marker; never instantiated."""

    def __new__(cls) -> _State:
        raise TypeError(f"{cls.__name__} is a type-level Worker state; it has no instances")


@final
class Mutable(_State):
    """Tools may be registered, replaced and unregistered."""


@final
class Locked(_State):
    """The tool set is fixed; hooks may still be added and tools called."""


StateT = TypeVar("StateT", bound=_State)


class _Core:
    """What a worker's successive states share: the tool server and the hooks."""

    __slots__ = ("handle", "hooks")

    def __init__(self) -> None:
        self.handle = ToolServer().handle()
        self.hooks = HookChains(pre=[], post=[])


@final
class Worker(Generic[StateT]):
    """Holds a ToolServer; registers tools (Mutable only), hooks, and runs tool calls."""

    __slots__ = ("_core", "_locked", "_moved_by")

    def __init__(self: Worker[Mutable]) -> None:
        self._core: _Core | None = _Core()
        self._locked = False
        self._moved_by = ""

    # -- every state -------------------------------------------------------------------

    @property
    def is_locked(self) -> bool:
        """Whether this worker is a ``Worker[Locked]`` at run time."""
        self._live()
        return self._locked

    def tool_server_handle(self) -> ToolServerHandle:
        """A handle onto this worker's tools, for hooks and applications."""
        return self._live().handle.copy()

    def add_pre_tool_call_hook(self, hook: PreToolCallHook) -> None:
        """Run ``hook`` before each call, after the hooks added earlier."""
        self._live().hooks.pre.append(hook)

    def add_post_tool_call_hook(self, hook: PostToolCallHook) -> None:
        """Run ``hook`` after each executed call, after the hooks added earlier."""
        self._live().hooks.post.append(hook)

    async def call_tools(self, calls: Sequence[ToolCall]) -> BatchOutcome:
        """Run a batch: pre-hooks call by call, the calls concurrently, then post-hooks.

        Returns ``Completed(results)`` in call order, or ``Paused`` when a tool requires
        approval (checked for every call before any hook runs) or a pre-hook paused.
        An unknown tool or a failing tool gives an ``is_error`` result; a hook's
        ``Abort(reason)`` raises ``ToolBatchAborted``. Cancelling the caller cancels the
        tool calls in flight.
        """
        core = self._live()
        return await run_batch(core.handle, core.hooks, calls)

    async def call_tool(
        self,
        name: str,
        input_json: str,
        *,
        call_id: str = "",
        metadata: Mapping[str, str] = NO_METADATA,
        deadline: float | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - enforced by one watchdog timer
    ) -> str:
        """Run one call through the hooks, as ``call_tools`` would, and return its text.

        Raises like ``ToolServerHandle.call_tool``: ``ToolServerError.ToolNotFound``, or
        ``ToolServerError.ToolExecution`` with the tool's ``ToolError`` as ``__cause__``;
        ``ToolServerError.ToolTimeout`` past ``timeout``; a hook's ``Abort(reason)``
        raises ``ToolBatchAborted``, and a ``Pause()`` or a tool that requires approval
        raises ``ToolCallPaused``. Hooks see ``ToolCall(call_id, name, input_json,
        metadata, deadline, timeout)``.
        """
        output = await self.call_tool_output(
            name,
            input_json,
            call_id=call_id,
            metadata=metadata,
            deadline=deadline,
            timeout=timeout,
        )
        return output if isinstance(output, str) else output.text

    def call_tool_output(
        self,
        name: str,
        input_json: str,
        *,
        call_id: str = "",
        metadata: Mapping[str, str] = NO_METADATA,
        deadline: float | None = None,
        timeout: float | None = None,  # enforced by one watchdog timer
    ) -> Coroutine[object, None, str | ToolOutput]:
        """As ``call_tool``, keeping a structured result: a ``ToolOutput`` when the tool
        gave one, else the text. (A plain method returning the call's coroutine: one frame
        less on the server's call path; await it as an ``async def``.)"""
        core = self._live()
        return run_one_call(
            core.handle, core.hooks, call_id, name, input_json, metadata, deadline, timeout
        )

    def stream_tool(
        self,
        name: str,
        input_json: str,
        *,
        call_id: str = "",
        metadata: Mapping[str, str] = NO_METADATA,
        deadline: float | None = None,
        timeout: float | None = None,
    ) -> AsyncGenerator[StreamEvent]:
        """Run one call as ``call_tool`` does, as an async iterator of its events:
        ``Progress`` and ``OutputChunk`` while the tool runs, then the result as a
        ``ToolOutput``, always last; the call's error is raised as ``call_tool`` raises it.

        Pre-hooks run before the first event. Post-hooks see the final result and may
        rewrite it; chunks already sent are not rewritten. Closing the iterator (or
        cancelling its reader) cancels the call.
        """
        core = self._live()
        return stream_one_call(
            core.handle, core.hooks, call_id, name, input_json, metadata, deadline, timeout
        )

    async def resume(
        self, paused: Paused, decisions: Mapping[str, Decision] | None = None
    ) -> BatchOutcome:
        """Continue a paused batch, once, after applying ``decisions`` by call id
        (``Approve()``, ``Deny(reason)``, ``ApproveWithInput(input_json)``). A call awaiting
        approval with no decision pauses the batch again; a denied one gets an error
        result and never runs. ``WorkerError`` when a decision names no pending call (the
        batch stays resumable)."""
        self._live()
        return await resume_batch(paused, decisions or {})

    def save_paused(self, paused: Paused) -> str:
        """``paused`` as JSON text a worker with the same tools and pre-hooks (another
        process, or this one after a restart) turns back into a batch with ``load_paused``.
        The text names the pre-hooks of the worker the batch paused on, whichever worker
        saves it. The batch stays resumable here too: resume it in one place only.
        ``WorkerError`` when it was resumed already, paused on a server, or one of those
        pre-hooks has no stable name (a lambda)."""
        self._live()
        return save_paused(paused)

    def load_paused(self, saved: str) -> Paused:
        """The batch ``save_paused`` saved, to resume on this worker: tools are found by
        name (one gone since answers as an unknown tool), the pre-hooks must have the same
        names in the same order, and the pending calls have no deadline. A pre-hook that
        paused is not asked again: the batch goes on with the hooks after it."""
        core = self._live()
        return load_paused(saved, core.handle, core.hooks)

    def unnamed_pre_hooks(self) -> list[str]:
        """The pre-hooks that make ``save_paused`` refuse (lambdas, callables without a
        name), as their reprs; empty when every paused batch can be saved."""
        return unnamed_hooks(self._live().hooks)

    # -- Mutable only ------------------------------------------------------------------

    def register_tool(self: Worker[Mutable], definition: ToolDefinition) -> None:
        """Call ``definition`` once and register the tool it makes.

        Raises ``ToolRegistryError.DuplicateName`` when the name is taken.
        """
        self.register_tools([definition])

    def register_tools(self: Worker[Mutable], definitions: Iterable[ToolDefinition]) -> None:
        """Register every definition, or none when any name is a duplicate."""
        handle = self._mutable("register_tools").handle
        handle._register_tools(definitions)  # pyright: ignore[reportPrivateUsage]

    def unregister_tool(self: Worker[Mutable], name: str) -> ToolMeta:
        """Remove the tool ``name`` and return its meta; calls in flight finish."""
        handle = self._mutable("unregister_tool").handle
        return handle._unregister_tool(name)  # pyright: ignore[reportPrivateUsage]

    def replace_tool(self: Worker[Mutable], definition: ToolDefinition) -> None:
        """Swap in a new instance and meta under an existing name; calls in flight finish
        on the instance they started with."""
        handle = self._mutable("replace_tool").handle
        handle._replace_tool(definition)  # pyright: ignore[reportPrivateUsage]

    def lock(self: Worker[Mutable]) -> Worker[Locked]:
        """Fix the tool set. Consumes this worker: use the returned one from now on."""
        self._mutable("lock")
        return cast("Worker[Locked]", self._move_to(locked=True, by="lock()"))

    # -- Locked only -------------------------------------------------------------------

    def unlock(self: Worker[Locked]) -> Worker[Mutable]:
        """Reopen registration. Consumes this worker: use the returned one from now on."""
        self._live()
        if not self._locked:
            raise WorkerStateError("unlock() needs a locked Worker; this one is already mutable")
        return cast("Worker[Mutable]", self._move_to(locked=False, by="unlock()"))

    # -- internals ---------------------------------------------------------------------

    def _live(self) -> _Core:
        if self._core is None:
            raise WorkerStateError(
                f"this Worker was consumed by {self._moved_by}; "
                f"use the Worker that {self._moved_by} returned"
            )
        return self._core

    def _mutable(self, operation: str) -> _Core:
        core = self._live()
        if self._locked:
            raise WorkerStateError(
                f"{operation}() is not allowed on a locked Worker: the tool set is fixed; "
                "call unlock() to get a Worker[Mutable] first"
            )
        return core

    def _move_to(self, *, locked: bool, by: str) -> Worker[StateT]:
        successor = cast("Worker[StateT]", object.__new__(Worker))
        successor._core = self._live()
        successor._locked = locked
        successor._moved_by = ""
        self._core = None
        self._moved_by = by
        return successor

    def __repr__(self) -> str:
        if self._core is None:
            return f"<Worker consumed by {self._moved_by}>"
        state = "Locked" if self._locked else "Mutable"
        return f"<Worker[{state}] with {len(self._core.handle)} tools>"
