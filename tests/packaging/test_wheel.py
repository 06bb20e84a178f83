"""The built wheel, installed into fresh venvs: only namespaced top-level names, runtime
dependencies only, a server that starts from an empty folder (or one with files that would
shadow its modules), and a public API that ``pyright --verifytypes`` finds fully typed, with
mypy (the plugin's host) installed or not.

``pip install llmworker`` is the library and its gRPC clients; ``llmworker[server]`` adds
what only the server needs, and without it the server says so in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import grpc.aio
import pytest

from llmworker.v1 import tool_service_pb2, tool_service_pb2_grpc
from tests.grpc_support import REPO, ServerProcess

_CONSTRAINTS = REPO / "requirements" / "constraints.txt"
_SHADOW = 'import sys\nprint("THIS IS THE USER\'S OWN {name}")\nsys.exit(3)\n'


@dataclass(frozen=True)
class InstalledWheel:
    """A venv holding the wheel (with the ``mypy`` extra, the plugin's host)."""

    root: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def server(self) -> Path:
        return self.root / "bin" / "llmworker-server"

    def run_python(self, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), "-c", code],
            cwd=cwd,
            env=_without_repo_paths(),
            capture_output=True,
            text=True,
            timeout=60,
        )


def _without_repo_paths() -> dict[str, str]:
    """This environment, minus anything pointing Python at the repository or its venv."""
    return {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    }


def _pip(python: Path, *arguments: str) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "--quiet", *arguments],
        check=True,
        timeout=600,
        env=_without_repo_paths(),
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    _pip(Path(sys.executable), "wheel", "--no-deps", "--wheel-dir", str(work / "dist"), str(REPO))
    (built,) = (work / "dist").glob("llmworker-*.whl")
    return built


def _install(wheel: Path, extras: str, root: Path) -> InstalledWheel:
    venv.create(root, with_pip=True)
    environment = InstalledWheel(root)
    _pip(environment.python, "install", "-c", str(_CONSTRAINTS), f"{wheel}{extras}")
    return environment


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> InstalledWheel:
    """``llmworker[server,mypy]``: the server, and mypy to host the plugin."""
    return _install(wheel, "[server,mypy]", tmp_path_factory.mktemp("server-venv"))


@pytest.fixture(scope="module")
def library_only(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> InstalledWheel:
    """Plain ``llmworker``: the library and its gRPC clients."""
    return _install(wheel, "", tmp_path_factory.mktemp("library-venv"))


def test_the_library_alone_installs_no_server_dependency(
    library_only: InstalledWheel, tmp_path: Path
) -> None:
    for module in ("grpc_health", "grpc_reflection", "prometheus_client", "uvloop"):
        probe = library_only.run_python(f"import {module}", cwd=tmp_path)
        assert probe.returncode != 0, f"{module} came with plain llmworker"


def test_the_library_alone_runs_in_process_without_grpc_and_connects_with_it(
    library_only: InstalledWheel, tmp_path: Path
) -> None:
    probe = library_only.run_python(
        "import sys, llmworker\n"
        "worker = llmworker.Worker()\n"
        "print('grpc' in sys.modules)\n"
        "print(llmworker.RemoteToolServerHandle.__name__, 'grpc' in sys.modules)",
        cwd=tmp_path,
    )
    assert probe.stdout.split() == ["False", "RemoteToolServerHandle", "True"], probe.stderr


def test_the_server_without_its_extra_says_so_in_one_line(
    library_only: InstalledWheel, tmp_path: Path
) -> None:
    ran = subprocess.run(
        [str(library_only.server), "--demo"],
        cwd=tmp_path,
        env=_without_repo_paths(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 1
    assert ran.stdout == ""
    assert ran.stderr.count("\n") == 1, ran.stderr
    assert "pip install 'llmworker[server]'" in ran.stderr
    embedded = library_only.run_python("from llmworker_server import ServerApp", cwd=tmp_path)
    assert embedded.returncode == 1
    assert "MissingServerExtra: llmworker-server needs the server extra" in embedded.stderr


def test_the_wheel_installs_only_namespaced_top_level_names(
    installed: InstalledWheel, tmp_path: Path
) -> None:
    listing = installed.run_python(
        "from importlib.metadata import files\n"
        "names = {p.parts[0] for p in files('llmworker') if not p.parts[0].startswith('..')}\n"
        "print(' '.join(sorted(names)))",
        cwd=tmp_path,
    )
    assert listing.returncode == 0, listing.stderr
    names = set(listing.stdout.split())
    assert {name for name in names if not name.endswith(".dist-info")} == {
        "llmworker",
        "llmworker_server",
    }


def test_codegen_tools_are_not_runtime_dependencies(
    installed: InstalledWheel, tmp_path: Path
) -> None:
    for module in ("grpc_tools", "mypy_protobuf", "server"):
        probe = installed.run_python(f"import {module}", cwd=tmp_path)
        assert probe.returncode != 0, f"{module} is importable from the installed wheel"
        assert "ModuleNotFoundError" in probe.stderr


def test_the_embedding_import_path_is_typed(installed: InstalledWheel, tmp_path: Path) -> None:
    probe = installed.run_python(
        "import importlib.resources as r, llmworker_server as s\n"
        "print(s.ServerApp.__name__, r.files('llmworker_server').joinpath('py.typed').is_file())",
        cwd=tmp_path,
    )
    assert probe.stdout.split() == ["ServerApp", "True"], probe.stderr


async def _echo(port: int) -> str:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = tool_service_pb2_grpc.ToolServiceStub(channel)
        reply = await stub.CallTool(
            tool_service_pb2.CallToolRequest(name="echo", input_json='{"text":"hi"}'),
            timeout=10,
        )
    return reply.output


async def test_the_installed_server_starts_from_an_empty_folder(
    installed: InstalledWheel, tmp_path: Path
) -> None:
    server = ServerProcess(
        ["--demo", "--no-internal", "--port", "0"],
        command=[str(installed.server)],
        cwd=tmp_path,
    )
    try:
        assert await _echo(await server.port()) == "hi"
    finally:
        assert server.stop() == 0, server.output


async def test_workers_cannot_be_shadowed_by_files_in_the_working_directory(
    installed: InstalledWheel, tmp_path: Path
) -> None:
    for name in ("llmworker_server", "server", "llmworker"):
        (tmp_path / f"{name}.py").write_text(_SHADOW.format(name=f"{name}.py"))
    server = ServerProcess(
        ["--demo", "--no-internal", "--port", "50177", "--workers", "2"],
        command=[str(installed.server)],
        cwd=tmp_path,
    )
    try:
        assert await _echo(await server.port()) == "hi"
    finally:
        code = server.stop()
    assert "THIS IS THE USER'S OWN" not in server.output
    assert code == 0, server.output


@pytest.mark.parametrize("extras", ["library_only", "installed"])
def test_pyright_finds_the_public_api_fully_typed(
    extras: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """With mypy installed (``[server,mypy]``) and without it (plain): ``llmworker.mypy``
    imports mypy, and its public names must not depend on it."""
    installed: InstalledWheel = request.getfixturevalue(extras)
    pyright = Path(sys.executable).parent / "pyright"
    report = subprocess.run(
        [str(pyright), "--verifytypes", "llmworker", "--ignoreexternal"],
        cwd=tmp_path,
        env={
            **_without_repo_paths(),
            "VIRTUAL_ENV": str(installed.root),
            "PATH": f"{installed.root / 'bin'}{os.pathsep}{os.environ['PATH']}",
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Type completeness score: 100%" in report.stdout, report.stdout[-4000:]
