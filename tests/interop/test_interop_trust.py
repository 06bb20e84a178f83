"""Who may do what, from grpc-go and the TypeScript SDK: provider identities on the internal
ToolRegistry (--provider-tokens) and caller-bound approvals on ResumeBatch (--auth-tokens).

The Python checks are tests/server/test_provider_identities.py and tests/server/test_auth.py;
the binaries come from ``make interop`` (part of ``make test``); a missing one is a failure
that says how to build it, never a skip.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from llmworker import Worker, tool_definitions
from llmworker_server.demo_tools import DemoTools
from tests.grpc_support import REPO, serve
from tests.interop.test_interop import GO_BINARY, NODE_MODULES, require, run

NODE_IDENTITY = REPO / "tests/interop/node/identity.mjs"
NODE_APPROVALS = REPO / "tests/interop/node/approvals.mjs"
ALPHA = "alpha-provider-token-0123456789"
BRAVO = "bravo-provider-token-9876543210"
OWNER = "owner-caller-token-0123456789"
OTHER = "other-caller-token-9876543210"
APPROVER = "approver-caller-token-0123456789"
IDENTITY_CHECKS = [
    "OK identity owner registers",
    "OK identity another identity cannot take over",
    "OK identity another identity cannot unregister",
    "OK identity tool outside globs refused",
    "OK identity target outside globs refused before dial",
    "OK identity served definition compared",
    "OK identity lock needs may_lock",
    "OK identity no token refused",
    "OK identity owner unregisters",
]
APPROVALS_CHECKS = [
    "OK approvals another caller cannot resume",
    "OK approvals the owner resumes after a refused attempt",
    "OK approvals an approver decides another caller's batch",
]


def private_json(path: Path, content: object) -> Path:
    """``content`` as JSON in ``path``, readable by this user only (as token files must be)."""
    path.write_text(json.dumps(content))
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("language", ["go", "node"])
async def test_providers_in_other_languages_are_held_to_their_identities(
    language: str, tmp_path: Path
) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    # The Go program serves go_reverse and go_whoami itself; the Node one registers the echo
    # of a Python provider.
    alpha_tools = ["go_*"] if language == "go" else ["echo", "go_*"]
    providers = private_json(
        tmp_path / "providers.json",
        {
            "providers": [
                {"token": ALPHA, "label": "alpha", "tools": alpha_tools,
                 "targets": ["127.0.0.1:*"]},
                # Without may_lock: an identity with it may unregister any tool.
                {"token": BRAVO, "label": "bravo", "tools": ["*"], "targets": ["*"]},
            ]
        },
    )  # fmt: skip
    socket = tmp_path / "internal.sock"
    async with contextlib.AsyncExitStack() as stack:
        front = serve(worker=Worker(), provider_tokens=providers, internal_socket=socket)
        served = await stack.enter_async_context(front)
        internal = served.app.internal_target
        assert internal is not None
        if language == "go":
            command = [str(GO_BINARY), "identity", "-registry", internal,
                       "-alpha", ALPHA, "-bravo", BRAVO]  # fmt: skip
        else:
            provider = await stack.enter_async_context(serve(internal=False))
            command = ["node", str(NODE_IDENTITY), internal, ALPHA, BRAVO, provider.target]
        code, output = await run(*command)
        assert code == 0, output
        for check in IDENTITY_CHECKS:
            assert check in output, output
        assert served.app.registry.handle.definitions_snapshot().definitions == (), (
            "the owner unregistered its tool, and nothing else was taken"
        )
        assert not served.app.registry.is_locked


@pytest.mark.parametrize("language", ["go", "node"])
async def test_agents_in_other_languages_resume_only_their_own_batches(
    language: str, tmp_path: Path
) -> None:
    require(GO_BINARY if language == "go" else NODE_MODULES)
    tokens = private_json(
        tmp_path / "tokens.json",
        {
            "tokens": [
                {"token": OWNER, "tools": ["*"], "label": "agent-a"},
                {"token": OTHER, "tools": ["*"], "label": "agent-b"},
                {"token": APPROVER, "tools": ["*"], "label": "approvals-ui", "approves": ["*"]},
            ]
        },
    )
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    async with serve(worker=worker, auth_tokens=tokens, internal=False) as served:
        if language == "go":
            command = [str(GO_BINARY), "approvals", "-target", served.target,
                       "-owner", OWNER, "-other", OTHER, "-approver", APPROVER]  # fmt: skip
        else:
            command = ["node", str(NODE_APPROVALS), served.target, OWNER, OTHER, APPROVER]
        code, output = await run(*command)
        assert code == 0, output
        for check in APPROVALS_CHECKS:
            assert check in output, output
        assert served.app.tools.in_flight == 0
