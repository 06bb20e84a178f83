"""The public API: ``__all__`` is sorted, complete, and every name resolves."""

from __future__ import annotations

import pytest

import llmworker


def test_all_is_sorted_and_every_name_exists() -> None:
    assert llmworker.__all__ == sorted(llmworker.__all__)
    for name in llmworker.__all__:
        assert hasattr(llmworker, name), name


def test_every_public_member_is_exported() -> None:
    public = {
        name
        for name, value in vars(llmworker).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("llmworker")
    }
    assert public <= set(llmworker.__all__)


def test_the_package_ships_py_typed() -> None:
    from importlib.resources import files

    assert files("llmworker").joinpath("py.typed").is_file()


def test_in_process_use_does_not_import_grpc() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, llmworker\n"
        "from llmworker import Worker, tool_definitions\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in {'grpc', 'google'}], 'grpc'\n"
        "llmworker.RemoteToolServerHandle\n"
        "assert 'grpc' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)


def test_the_clients_load_on_first_use_and_are_listed() -> None:
    from llmworker._client.remote import RemoteToolServerHandle

    assert llmworker.RemoteToolServerHandle is RemoteToolServerHandle
    assert "ClientTls" in dir(llmworker)
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        llmworker.Nothing  # noqa: B018  # pyright: ignore[reportAttributeAccessIssue]
