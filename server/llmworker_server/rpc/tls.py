"""TLS for the server's listeners: certificates read from PEM files, checked before they
are used, and read again on SIGHUP (rotation without a restart)."""

from __future__ import annotations

import logging
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import grpc

from ..errors import TlsFilesError

__all__ = ["ListenerTls", "TlsFiles"]

_log = logging.getLogger("llmworker.server.tls")


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """The server's certificate chain and key, and the CA that client certificates must be
    signed by (mutual TLS) or None."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def load(self) -> grpc.ServerCertificateConfiguration:
        """The files' contents as gRPC takes them, once they are checked to work together."""
        pair = (_read(self.key, "--tls-key"), _read(self.cert, "--tls-cert"))
        client_ca = None if self.client_ca is None else _read(self.client_ca, "--tls-client-ca")
        _check(self)
        return grpc.ssl_server_certificate_configuration([pair], root_certificates=client_ca)


def _read(path: Path, flag: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise TlsFilesError(f"{flag} {path}: cannot be read ({error.strerror})") from None


def _check(files: TlsFiles) -> None:
    """Load the files the way OpenSSL will, to refuse a bad pair with a clear message
    instead of a failed handshake for every client."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(files.cert, files.key, password=_no_password)
    except _Encrypted:
        raise TlsFilesError(
            f"--tls-key {files.key} is encrypted; give the server an unencrypted key "
            "(readable only by its user)"
        ) from None
    except (ssl.SSLError, OSError) as error:
        raise TlsFilesError(
            f"--tls-cert {files.cert} and --tls-key {files.key} cannot be used together "
            f"({_reason(error)}); give a PEM certificate chain and the PEM key it was made for"
        ) from None
    if files.client_ca is not None:
        try:
            context.load_verify_locations(cafile=files.client_ca)
        except (ssl.SSLError, OSError) as error:
            raise TlsFilesError(
                f"--tls-client-ca {files.client_ca} holds no usable CA certificate "
                f"({_reason(error)}); give the PEM certificate of the CA that signs client "
                "certificates"
            ) from None


class _Encrypted(Exception):
    pass


def _no_password() -> str:
    raise _Encrypted


def _reason(error: ssl.SSLError | OSError) -> str:
    if isinstance(error, ssl.SSLError) and error.reason:
        return str(error.reason)
    return error.strerror or type(error).__name__


class ListenerTls:
    """Server credentials whose certificates can be replaced while serving: ``reload()``
    reads the files again, and every connection accepted after it, on every listener made
    with ``credentials()``, uses the new ones."""

    def __init__(self, files: TlsFiles) -> None:
        self.files = files
        self._current = files.load()
        self._generation = 0
        self._lock = threading.Lock()  # gRPC asks for certificates from its own threads

    def credentials(self) -> grpc.ServerCredentials:
        """Credentials for one ``add_secure_port``: client certificates are required and
        verified when the files name a client CA."""
        seen = self._generation

        def replacement() -> grpc.ServerCertificateConfiguration | None:
            """Called by gRPC before each handshake: certificates reloaded since this
            listener last asked, else None (keep the current ones)."""
            nonlocal seen
            with self._lock:
                if seen == self._generation:
                    return None
                seen = self._generation
                return self._current

        # gRPC documents None as "keep the current certificates"; the stubs omit it.
        fetch = cast("Callable[[], grpc.ServerCertificateConfiguration]", replacement)
        return grpc.dynamic_ssl_server_credentials(
            self._current,
            fetch,
            require_client_authentication=self.files.client_ca is not None,
        )

    def reload(self) -> bool:
        """Read the files again; on a problem keep the certificates in use and log why."""
        try:
            fresh = self.files.load()
        except TlsFilesError as error:
            _log.error("TLS certificates not reloaded, the ones in use stay: %s", error)
            return False
        with self._lock:
            self._current = fresh
            self._generation += 1
        _log.info("TLS certificates reloaded from %s and %s", self.files.cert, self.files.key)
        return True
