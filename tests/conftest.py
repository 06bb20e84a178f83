"""Fixtures shared across the test packages (library/, server/, interop/, bench/, packaging/,
docs/); helpers that are plain functions live beside it (``grpc_support``, ``tls_support``)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tls_support import Pki

pytest_plugins = ["tests.pg_support"]  # postgres_cluster, postgres_url: a real PostgreSQL


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A certificate authority with server and client certificates, made once per run.

    Tests only read these files; a test that rewrites certificates makes its own ``Pki``."""
    return Pki.create(tmp_path_factory.mktemp("pki"))


@pytest.fixture(autouse=True)
def private_state_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Each test's servers (in process or children) keep their default SQLite store of
    paused batches in a directory of their own, removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="llmworker-state-"))
    monkeypatch.setenv("LLMWORKER_STATE_DIR", str(directory))
    monkeypatch.delenv("LLMWORKER_STATE", raising=False)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)
