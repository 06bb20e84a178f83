"""Certificates made at test time: a CA, a server certificate for 127.0.0.1 and localhost,
client certificates, and a second CA whose certificates the first one's server refuses."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from llmworker import ClientTls
from llmworker_server.rpc.tls import TlsFiles


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Authority:
    """A CA that signs certificates into ``directory``."""

    name: str
    directory: Path
    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @property
    def cert(self) -> Path:
        return self.directory / f"{self.name}.pem"

    @classmethod
    def create(cls, directory: Path, name: str) -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} test CA")])
        certificate = (
            _builder(subject, subject, key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(key, hashes.SHA256())
        )
        authority = cls(name, directory, key, certificate)
        authority.cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return authority

    def issue(self, name: str, *, server: bool) -> Issued:
        """A server certificate for 127.0.0.1 and localhost, or a client certificate whose
        subject's common name is ``name``."""
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = _builder(subject, self.certificate.subject, key.public_key()).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if server:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        issued = Issued(self.directory / f"{name}.pem", self.directory / f"{name}.key")
        issued.cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        issued.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        issued.key.chmod(0o600)
        return issued


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


@dataclass(frozen=True)
class Pki:
    """Everything a TLS test needs: ``ca`` signs the server and ``client``; ``other_ca``
    signs ``stranger``, a client the server must refuse."""

    ca: Authority
    server: Issued
    client: Issued
    other_ca: Authority
    stranger: Issued

    @classmethod
    def create(cls, directory: Path) -> Pki:
        directory.mkdir(parents=True, exist_ok=True)
        ca = Authority.create(directory, "ca")
        other = Authority.create(directory, "other-ca")
        return cls(
            ca,
            ca.issue("server", server=True),
            ca.issue("client", server=False),
            other,
            other.issue("stranger", server=False),
        )

    def server_files(self, *, mutual: bool = False) -> TlsFiles:
        return TlsFiles(self.server.cert, self.server.key, self.ca.cert if mutual else None)

    def client_tls(self, issued: Issued | None = None) -> ClientTls:
        """Trusting ``ca``, presenting ``issued`` when given."""
        if issued is None:
            return ClientTls.from_files(root_ca=self.ca.cert)
        return ClientTls.from_files(root_ca=self.ca.cert, cert=issued.cert, key=issued.key)
