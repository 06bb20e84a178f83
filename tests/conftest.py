"""Fixtures shared across the test packages (library/, server/, interop/, bench/, packaging/,
docs/); helpers that are plain functions live beside it (``grpc_support``, ``tls_support``)."""

from __future__ import annotations

import pytest

from tests.tls_support import Pki


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """A certificate authority with server and client certificates, made once per run.

    Tests only read these files; a test that rewrites certificates makes its own ``Pki``."""
    return Pki.create(tmp_path_factory.mktemp("pki"))
