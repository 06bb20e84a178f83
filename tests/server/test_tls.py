"""TLS and mutual TLS on the server's listeners, with certificates made at test time: Python
clients, refusals that say what to do, the internal TCP listener and a provider over TLS,
rotation on reload and SIGHUP, and files that cannot work refused at start."""

from __future__ import annotations

import asyncio
import shutil
import signal
from pathlib import Path

import grpc
import pytest

from llmworker import (
    ClientTls,
    Mutable,
    RemoteServiceError,
    RemoteToolServerHandle,
    SyncRemoteToolServerHandle,
    ToolRegistryClient,
    Worker,
    tool_definitions,
)
from llmworker_server.app import ServerApp
from llmworker_server.cli import parse_args
from llmworker_server.config import ServerConfig
from llmworker_server.demo_tools import DemoTools
from llmworker_server.errors import TlsFilesError
from llmworker_server.rpc.tls import TlsFiles
from tests.grpc_support import ServerProcess, serve
from tests.tls_support import Pki

TOKEN = "tls-test-token"


def demo_worker() -> Worker[Mutable]:
    worker = Worker()
    worker.register_tools(tool_definitions(DemoTools()))
    return worker


async def echo_over(target: str, tls: ClientTls | None, text: str = "over tls") -> str:
    handle = await RemoteToolServerHandle.connect(target, tls=tls, watch=False)
    try:
        return await handle.call_tool("echo", f'{{"text": "{text}"}}')
    finally:
        await handle.close()


async def refusal(target: str, tls: ClientTls | None) -> RemoteServiceError:
    with pytest.raises(RemoteServiceError) as caught:
        await echo_over(target, tls)
    return caught.value


async def test_tls_serves_python_clients_async_and_blocking(pki: Pki) -> None:
    async with serve(worker=demo_worker(), tls=pki.server_files()) as served:
        assert await echo_over(served.target, pki.client_tls()) == "over tls"
        blocking = await asyncio.to_thread(
            SyncRemoteToolServerHandle, served.target, tls=pki.client_tls()
        )
        try:
            assert "echo" in [meta.name for meta in blocking.tool_definitions_sorted()]
            assert await asyncio.to_thread(blocking.call_tool, "echo", '{"text": "b"}') == "b"
        finally:
            blocking.close()


async def test_a_plaintext_client_to_a_tls_port_is_told_to_use_tls(pki: Pki) -> None:
    async with serve(worker=demo_worker(), tls=pki.server_files()) as served:
        error = await refusal(served.target, None)
        assert error.code is grpc.StatusCode.UNAVAILABLE
        assert "connect with tls=ClientTls.from_files(root_ca=...)" in error.message


async def test_a_client_that_does_not_trust_the_server_ca_is_refused(pki: Pki) -> None:
    async with serve(worker=demo_worker(), tls=pki.server_files()) as served:
        strangers_trust = ClientTls.from_files(root_ca=pki.other_ca.cert)
        error = await refusal(served.target, strangers_trust)
        assert error.code is grpc.StatusCode.UNAVAILABLE
        assert "tls=ClientTls" not in error.message  # it did use TLS: no plaintext hint


async def test_mutual_tls_takes_a_client_of_its_ca_and_refuses_the_others(pki: Pki) -> None:
    async with serve(worker=demo_worker(), tls=pki.server_files(mutual=True)) as served:
        assert await echo_over(served.target, pki.client_tls(pki.client)) == "over tls"
        no_certificate = await refusal(served.target, pki.client_tls())
        other_ca = await refusal(served.target, pki.client_tls(pki.stranger))
        for error in (no_certificate, other_ca):
            assert error.code is grpc.StatusCode.UNAVAILABLE
        # the server kept serving the client it trusts
        assert await echo_over(served.target, pki.client_tls(pki.client), "still") == "still"


async def test_the_tcp_internal_listener_and_a_provider_work_over_mutual_tls(
    pki: Pki,
) -> None:
    """A front server with TLS on both listeners; a provider (TLS too) registers over the
    internal listener and the front forwards calls to it over TLS."""
    client = pki.client_tls(pki.client)
    front_config = ServerConfig(
        port=0,
        log_level="WARNING",
        internal_address="127.0.0.1:0",
        token=TOKEN,
        tls=pki.server_files(mutual=True),
        outgoing_tls=client,
    )
    provider_worker = Worker()
    provider_worker.register_tools(tool_definitions(DemoTools()))
    async with serve(front_config, worker=Worker()) as front:
        internal = front.app.internal_target
        assert internal is not None
        assert internal.startswith("127.0.0.1:")
        with pytest.raises(RemoteServiceError):  # plaintext to the internal TLS listener
            async with ToolRegistryClient(internal, TOKEN, timeout=5) as plaintext:
                await plaintext.lock()
        provider_config = ServerConfig(
            port=0,
            log_level="WARNING",
            internal=False,
            tls=pki.server_files(mutual=True),
            outgoing_tls=client,
            register_with=internal,
            token=TOKEN,
        )
        async with serve(provider_config, worker=provider_worker):
            assert front.app.registry.handle.get_tool("calculate") is not None
            handle = await RemoteToolServerHandle.connect(front.target, tls=client, watch=False)
            try:
                assert await handle.call_tool("calculate", '{"expression": "6 * 7"}') == "42"
            finally:
                await handle.close()


def copy_server_files(source: TlsFiles, directory: Path) -> TlsFiles:
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "server.pem", directory / "server.key"
    shutil.copyfile(source.cert, cert)
    shutil.copyfile(source.key, key)
    return TlsFiles(cert, key)


async def test_reload_rotates_certificates_and_keeps_them_when_the_new_ones_are_bad(
    pki: Pki, tmp_path: Path
) -> None:
    rotated = Pki.create(tmp_path / "rotated")
    files = copy_server_files(pki.server_files(), tmp_path / "live")
    async with serve(worker=demo_worker(), tls=files) as served:
        assert await echo_over(served.target, pki.client_tls()) == "over tls"

        files.cert.write_text("not a certificate")
        served.app.reload()  # refused and logged: the certificates in use stay
        assert await echo_over(served.target, pki.client_tls(), "kept") == "kept"

        shutil.copyfile(rotated.server.cert, files.cert)
        shutil.copyfile(rotated.server.key, files.key)
        served.app.reload()
        assert await echo_over(served.target, rotated.client_tls(), "rotated") == "rotated"
        error = await refusal(served.target, pki.client_tls())  # new connections: new cert
        assert error.code is grpc.StatusCode.UNAVAILABLE


async def test_sighup_rotates_the_certificates_of_a_server_process(
    pki: Pki, tmp_path: Path
) -> None:
    rotated = Pki.create(tmp_path / "rotated")
    files = copy_server_files(pki.server_files(), tmp_path / "live")
    process = ServerProcess(
        ["--demo", "--no-internal", "--port", "0", "--log-level", "INFO",
         "--tls-cert", str(files.cert), "--tls-key", str(files.key)]
    )  # fmt: skip
    try:
        target = f"127.0.0.1:{await process.port()}"
        assert "(internal: off, registry locked, TLS, any caller)" in "".join(process.lines)
        assert await echo_over(target, pki.client_tls()) == "over tls"
        shutil.copyfile(rotated.server.cert, files.cert)
        shutil.copyfile(rotated.server.key, files.key)
        process.process.send_signal(signal.SIGHUP)
        for _ in range(100):
            if any("TLS certificates reloaded" in line for line in process.lines):
                break
            await asyncio.sleep(0.05)
        assert await echo_over(target, rotated.client_tls(), "rotated") == "rotated"
    finally:
        process.stop()
    assert process.process.returncode == 0, "".join(process.lines)


@pytest.mark.parametrize(
    ("problem", "message"),
    [
        ("mismatch", "cannot be used together (KEY_VALUES_MISMATCH)"),
        ("missing", "cannot be read (No such file or directory)"),
        ("encrypted", "is encrypted; give the server an unencrypted key"),
        ("bad_ca", "holds no usable CA certificate"),
    ],
)
def test_tls_files_that_cannot_work_are_refused_at_start_naming_the_file(
    pki: Pki, tmp_path: Path, problem: str, message: str
) -> None:
    files = {
        "mismatch": TlsFiles(pki.server.cert, pki.client.key),
        "missing": TlsFiles(tmp_path / "absent.pem", pki.server.key),
        "encrypted": TlsFiles(pki.server.cert, encrypted_copy(pki.server.key, tmp_path)),
        "bad_ca": TlsFiles(pki.server.cert, pki.server.key, pki.server.key),
    }[problem]
    with pytest.raises(TlsFilesError, match=r"--tls-") as caught:
        ServerApp(ServerConfig(port=0, internal=False, tls=files))
    assert message in str(caught.value)


def encrypted_copy(key: Path, directory: Path) -> Path:
    from cryptography.hazmat.primitives import serialization

    loaded = serialization.load_pem_private_key(key.read_bytes(), password=None)
    path = directory / "encrypted.key"
    path.write_bytes(
        loaded.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"passphrase"),
        )
    )
    return path


def test_a_public_address_beyond_loopback_needs_tls_or_allow_insecure(
    pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--host", "0.0.0.0"])
    assert "--host 0.0.0.0 would serve plaintext beyond this machine" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--internal-address", "10.0.0.5:7000"])
    assert "would send the registry token in plaintext" in capsys.readouterr().err
    assert parse_args(["--host", "0.0.0.0", "--allow-insecure"]).allow_insecure
    tls = ["--tls-cert", str(pki.server.cert), "--tls-key", str(pki.server.key)]
    assert parse_args(["--host", "0.0.0.0", *tls]).tls == TlsFiles(pki.server.cert, pki.server.key)
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"):
        assert parse_args(["--host", host]).tls is None


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--tls-cert", "a.pem"], "TLS needs both --tls-cert and --tls-key"),
        (["--tls-client-ca", "ca.pem"], "--tls-client-ca needs TLS"),
        (["--outgoing-tls-cert", "c.pem"], "need --outgoing-tls-ca"),
        (["--outgoing-tls-ca", "/nonexistent/ca.pem"], "outgoing TLS: ClientTls root_ca"),
    ],
)
def test_tls_flags_that_do_not_go_together_are_refused(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_args(arguments)
    assert message in capsys.readouterr().err


def test_client_tls_needs_a_key_with_its_certificate(pki: Pki) -> None:
    with pytest.raises(ValueError, match="both cert_chain and private_key"):
        ClientTls(root_ca=b"x", cert_chain=b"y")
    assert "BEGIN PRIVATE KEY" not in repr(pki.client_tls(pki.client))
