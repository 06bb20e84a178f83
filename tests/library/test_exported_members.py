"""The public API: ``__all__`` is sorted, complete, and every name resolves."""

from __future__ import annotations

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
