"""Run mypy and pyright on code snippets and collect their diagnostics."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

__all__ = ["mypy_errors", "pyright_errors"]

REPO = Path(__file__).resolve().parent.parent


def _write(directory: Path, source: str) -> Path:
    path = directory / "snippet.py"
    path.write_text(textwrap.dedent(source))
    return path


def mypy_errors(directory: Path, source: str, *extra_args: str) -> list[str]:
    """``line: message [code]`` for each mypy --strict error in ``source``."""
    path = _write(directory, source)
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
         "--cache-dir", str(REPO / ".mypy_cache"), "--config-file", "", *extra_args, str(path)],
        capture_output=True, text=True, timeout=300, cwd=directory, check=False,
    )  # fmt: skip
    assert completed.returncode in (0, 1), completed.stderr + completed.stdout
    prefix = f"{path.name}:"
    return [
        line.removeprefix(prefix).replace(" error: ", " ", 1)
        for line in completed.stdout.splitlines()
        if line.startswith(prefix) and " error: " in line
    ]


def pyright_errors(directory: Path, source: str) -> list[str]:
    """``line: rule: first message line`` for each pyright strict error in ``source``."""
    path = _write(directory, "# pyright: strict\n" + textwrap.dedent(source))
    completed = subprocess.run(
        [sys.executable, "-m", "pyright", "--outputjson", "--pythonpath", sys.executable,
         str(path)],
        capture_output=True, text=True, timeout=300, cwd=directory, check=False,
    )  # fmt: skip
    assert completed.returncode in (0, 1), completed.stderr + completed.stdout
    report = json.loads(completed.stdout)
    return [
        f"{diagnostic['range']['start']['line']}: {diagnostic.get('rule', '')}: "
        f"{diagnostic['message'].splitlines()[0]}"
        for diagnostic in report["generalDiagnostics"]
        if diagnostic["severity"] == "error"
    ]
