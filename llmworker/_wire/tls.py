"""How a client reaches a server over TLS: the root certificates it trusts and, for mutual
TLS, its own certificate and key."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, final

import grpc
import grpc.aio

from .._model.errors import RemoteServiceError
from .caller_token import caller_token_interceptors

__all__ = ["ClientTls", "aio_channel", "sync_channel", "with_tls_hint"]

_TLS_HINT: Final = (
    "; if the server serves TLS, connect with tls=ClientTls.from_files(root_ca=...), and if it "
    "asks for client certificates (mTLS), add cert= and key="
)


@final
@dataclass(frozen=True, slots=True)
class ClientTls:
    """TLS settings of a client: PEM bytes of the root certificates to trust (None: the
    system's), and the client's certificate chain and private key for mutual TLS.

    >>> tls = ClientTls.from_files(root_ca="ca.pem", cert="client.pem", key="client.key")
    >>> handle = await RemoteToolServerHandle.connect("tools.internal:50051", tls=tls)
    """

    root_ca: bytes | None = None
    cert_chain: bytes | None = None
    private_key: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.cert_chain is None) != (self.private_key is None):
            raise ValueError(
                "ClientTls needs both cert_chain and private_key for a client certificate, "
                "or neither"
            )

    @classmethod
    def from_files(
        cls,
        *,
        root_ca: str | Path | None = None,
        cert: str | Path | None = None,
        key: str | Path | None = None,
    ) -> ClientTls:
        """Read the PEM files; ``OSError`` names a file that cannot be read."""
        return cls(_read(root_ca, "root_ca"), _read(cert, "cert"), _read(key, "key"))

    def credentials(self) -> grpc.ChannelCredentials:
        """The gRPC channel credentials these settings describe."""
        return grpc.ssl_channel_credentials(self.root_ca, self.private_key, self.cert_chain)


def _read(path: str | Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise OSError(f"ClientTls {what}: cannot read {path} ({error.strerror})") from None


def aio_channel(
    target: str,
    tls: ClientTls | None,
    options: Sequence[tuple[str, int | str]] = (),
    token: str | None = None,
    interceptors: Sequence[grpc.aio.ClientInterceptor] = (),
) -> grpc.aio.Channel:
    """An asyncio channel to ``target``: over TLS with ``tls``, else plaintext; every call
    carries ``token`` as a bearer token when given, and goes through ``interceptors``."""
    chain = [*(caller_token_interceptors(token) if token else ()), *interceptors]
    if tls is None:
        return grpc.aio.insecure_channel(target, options=options, interceptors=chain or None)
    credentials = tls.credentials()
    return grpc.aio.secure_channel(target, credentials, options, interceptors=chain or None)


def sync_channel(
    target: str, tls: ClientTls | None, options: Sequence[tuple[str, int | str]] = ()
) -> grpc.Channel:
    """A blocking channel to ``target``: over TLS with ``tls``, else plaintext."""
    if tls is None:
        return grpc.insecure_channel(target, options=options)
    return grpc.secure_channel(target, tls.credentials(), options=options)


def with_tls_hint(error: RemoteServiceError, tls: ClientTls | None) -> RemoteServiceError:
    """``error`` of a first call; a plaintext client that could not connect is told that
    the server may serve TLS."""
    if tls is not None or error.code is not grpc.StatusCode.UNAVAILABLE:
        return error
    return RemoteServiceError(error.code, error.reason, error.message + _TLS_HINT, error.metadata)
