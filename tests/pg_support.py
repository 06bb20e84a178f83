"""A real PostgreSQL for the tests, started by the suite: Debian's server binaries
(``apt-get install -y postgresql``, which ``make unit`` does when they are missing), a
throw-away cluster on a Unix socket only, trust authentication, no fsync.

tests/conftest.py registers this module as a plugin (``pytest_plugins``), so every test can
name the fixtures as parameters without importing them. ``postgres_cluster`` (session) is
the cluster's URL, ``postgresql://postgres@/postgres?host=DIR``; ``postgres_url`` (per test)
is the URL of a fresh database on it, dropped after the test."""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

INSTALL_HINT = "install PostgreSQL's server binaries: apt-get install -y postgresql"
# Every wait on initdb, pg_ctl and the server is bounded by one of these (seconds).
INITDB_TIMEOUT = 120.0
START_TIMEOUT = 60
STOP_TIMEOUT = 30
CONNECT_TIMEOUT = 10
REAP_TIMEOUT = 5.0
# The user that runs the server when the suite runs as root (initdb refuses root).
UNPRIVILEGED_USER = "nobody"
# sun_path holds 108 bytes with the terminating NUL.
_MAX_SOCKET_PATH = 107
_SOCKET_NAME = ".s.PGSQL.5432"
_DATABASE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


class PostgresError(RuntimeError):
    """The cluster could not be set up, started or reached."""


@dataclass(frozen=True)
class Binaries:
    """initdb and pg_ctl of one PostgreSQL version."""

    initdb: Path
    pg_ctl: Path


def _version_key(directory: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in directory.name.split("."))


def find_binaries() -> Binaries:
    """initdb and pg_ctl of the newest PostgreSQL under /usr/lib/postgresql (else from PATH)."""
    versions = [
        path
        for path in Path("/usr/lib/postgresql").glob("*")
        if re.fullmatch(r"\d+(\.\d+)*", path.name)
        and (path / "bin" / "initdb").is_file()
        and (path / "bin" / "pg_ctl").is_file()
    ]
    if versions:
        bin_dir = max(versions, key=_version_key) / "bin"
        return Binaries(initdb=bin_dir / "initdb", pg_ctl=bin_dir / "pg_ctl")
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb is not None and pg_ctl is not None:
        return Binaries(initdb=Path(initdb), pg_ctl=Path(pg_ctl))
    raise PostgresError(
        f"no initdb and pg_ctl in /usr/lib/postgresql/*/bin or on PATH: {INSTALL_HINT}"
    )


def _socket_parent() -> str:
    """Where the cluster's directory goes: the temporary directory, if its socket path fits."""
    parent = tempfile.gettempdir()
    # mkdtemp adds "/pg-" and 8 characters; the socket is one level below.
    if len(os.fsencode(parent)) + len("/pg-12345678/") + len(_SOCKET_NAME) > _MAX_SOCKET_PATH:
        parent = "/tmp"
    return parent


def cluster_url(socket_dir: Path, database: str = "postgres") -> str:
    """The libpq URL of ``database`` on the cluster whose socket is in ``socket_dir``."""
    return f"postgresql://postgres@/{database}?host={quote(str(socket_dir), safe='/')}"


def with_database(url: str, name: str) -> str:
    """``url`` with its database replaced by ``name``."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


class Cluster:
    """A throw-away PostgreSQL cluster: ``start`` it, use ``url``, ``stop`` it.

    Its data directory, log and socket live in a private directory under /tmp (short enough
    for a socket path, and reachable by the unprivileged user the server runs as when we are
    root: pytest's directories are not); ``stop`` copies the log to
    ``directory/postgres.log`` and removes the rest."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.binaries = find_binaries()
        self._root = tempfile.mkdtemp(prefix="pg-", dir=_socket_parent())
        self.home = Path(self._root)
        self.data = self.home / "data"
        self.log = self.home / "postgres.log"
        self._user: pwd.struct_passwd | None = None
        self._started = False
        self._pid: int | None = None
        self.url = cluster_url(self.home)

    def _prepare(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            try:
                self._user = pwd.getpwnam(UNPRIVILEGED_USER)
            except KeyError:
                raise PostgresError(
                    f"running as root and there is no user {UNPRIVILEGED_USER!r} to run "
                    "PostgreSQL as (initdb refuses root)"
                ) from None
            os.chown(self.home, self._user.pw_uid, self._user.pw_gid)
        os.chmod(self.home, 0o700)

    def _run(self, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        """One initdb or pg_ctl command, as the server's user; PostgreSQL's output on failure."""
        env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
        env["LC_ALL"] = "C"
        user = self._user
        try:
            done = subprocess.run(
                args,
                cwd=self.home,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                user=None if user is None else user.pw_uid,
                group=None if user is None else user.pw_gid,
                extra_groups=None if user is None else [],
            )
        except subprocess.TimeoutExpired as exc:
            raise PostgresError(
                f"{shlex.join(args)} did not finish in {timeout} s:\n"
                f"{_text(exc.stdout)}{_text(exc.stderr)}{self._log_tail()}"
            ) from exc
        except OSError as exc:
            raise PostgresError(f"{shlex.join(args)}: {exc}; {INSTALL_HINT}") from exc
        if done.returncode != 0:
            raise PostgresError(
                f"{shlex.join(args)} exited with {done.returncode}:\n"
                f"{done.stdout}{done.stderr}{self._log_tail()}"
                f"(PostgreSQL's server comes from: apt-get install -y postgresql)"
            )
        return done

    def _log_tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").splitlines()[-40:]
        except OSError:
            return ""
        return "server log:\n" + "\n".join(lines) + "\n"

    def start(self) -> str:
        """initdb, start the server and check that it answers; the cluster's URL."""
        try:
            self._prepare()
            self._run(
                [
                    str(self.binaries.initdb),
                    "-D",
                    str(self.data),
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
                INITDB_TIMEOUT,
            )
            options = " ".join(
                [
                    f"-k {shlex.quote(str(self.home))}",
                    "-c listen_addresses=''",
                    "-c fsync=off",
                    "-c synchronous_commit=off",
                    "-c full_page_writes=off",
                ]
            )
            self._started = True
            self._run(
                [
                    str(self.binaries.pg_ctl),
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.log),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    str(START_TIMEOUT),
                    "start",
                ],
                START_TIMEOUT + 30,
            )
            self._pid = self._postmaster_pid()
            self._check()
        except BaseException:
            with contextlib.suppress(PostgresError):
                self.stop()
            raise
        return self.url

    def _check(self) -> None:
        try:
            with psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT) as connection:
                connection.execute("select 1")
        except psycopg.Error as exc:
            raise PostgresError(
                f"the cluster at {self.url} does not answer: {exc}\n{self._log_tail()}"
            ) from exc

    def stop(self) -> None:
        """Stop the server (immediate mode; SIGKILL if that fails) and remove its directory."""
        try:
            if self._started:
                self._started = False
                try:
                    self._run(
                        [
                            str(self.binaries.pg_ctl),
                            "-D",
                            str(self.data),
                            "-m",
                            "immediate",
                            "-w",
                            "-t",
                            str(STOP_TIMEOUT),
                            "stop",
                        ],
                        STOP_TIMEOUT + 30,
                    )
                except PostgresError:
                    self._kill()
                    raise
                if self._pid is not None:
                    _wait_gone(self._pid, REAP_TIMEOUT)
        finally:
            with contextlib.suppress(OSError):
                shutil.copyfile(self.log, self.directory / "postgres.log")
            shutil.rmtree(self.home, ignore_errors=True)

    def _postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def _kill(self) -> None:
        """SIGKILL the postmaster named in postmaster.pid and wait for it to go."""
        pid = self._postmaster_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, STOP_TIMEOUT)


def _wait_gone(pid: int, timeout: float) -> None:
    """Wait, at most ``timeout`` seconds, until ``pid`` is gone: pg_ctl leaves the postmaster
    to init, which reaps it a moment after it exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def _text(output: str | bytes | None) -> str:
    if output is None:
        return ""
    return output if isinstance(output, str) else output.decode(errors="replace")


@contextlib.contextmanager
def start_postgres(directory: Path) -> Generator[str, None, None]:
    """A running cluster for the block's duration: its URL, then stopped and removed."""
    cluster = Cluster(directory)
    url = cluster.start()
    try:
        yield url
    finally:
        cluster.stop()


def _check_name(name: str) -> None:
    if not _DATABASE_NAME.fullmatch(name):
        raise ValueError(f"not a plain database name: {name!r}")


def create_database(url: str, name: str) -> str:
    """Create the empty database ``name`` on the cluster of ``url``; its URL."""
    _check_name(name)
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return with_database(url, name)


def drop_database(url: str, name: str) -> None:
    """Drop the database ``name`` on the cluster of ``url``, closing its connections."""
    _check_name(name)
    with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as connection:
        connection.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="session")
def postgres_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a PostgreSQL cluster for the whole run (database ``postgres``)."""
    with start_postgres(tmp_path_factory.mktemp("postgres")) as url:
        yield url


@pytest.fixture
def postgres_url(postgres_cluster: str) -> Iterator[str]:
    """The URL of a fresh, empty database (``t_<hex>``) on the cluster, dropped afterwards."""
    name = f"t_{secrets.token_hex(8)}"
    url = create_database(postgres_cluster, name)
    try:
        yield url
    finally:
        drop_database(postgres_cluster, name)
