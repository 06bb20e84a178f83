"""Checking a provider's gRPC target before anything is made for it.

``RegisterTool`` names the server that implements a tool. A target gRPC cannot resolve
(``dns:///``, ``unix:``, ``host:99999``) would be accepted and every call to the tool would
then fail with a bare UNKNOWN, so targets are checked against gRPC's naming forms up front:

    HOST:PORT              [IPV6]:PORT        dns:[//AUTHORITY/]HOST[:PORT]
    ipv4:ADDR:PORT[,...]   ipv6:[ADDR]:PORT[,...]
    unix:PATH              unix:///ABSOLUTE/PATH               unix-abstract:NAME
"""

from __future__ import annotations

import ipaddress
import posixpath
import re
import urllib.parse
from typing import Final

from llmworker._wire import printable

__all__ = ["MAX_TARGET_LENGTH", "canonical_target", "target_problem"]

MAX_TARGET_LENGTH: Final = 512
_HOSTNAME: Final = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?"
)
_FORMS: Final = (
    "use HOST:PORT (e.g. '127.0.0.1:50061'), dns:HOST:PORT, ipv4:ADDR:PORT, "
    "ipv6:[ADDR]:PORT or unix:///ABSOLUTE/PATH"
)


def target_problem(target: str) -> str | None:
    """What is wrong with ``target`` as a provider's gRPC target, or None if it is usable."""
    shown = printable(target)
    if not target:
        return f"the provider target is empty; {_FORMS}"
    if len(target) > MAX_TARGET_LENGTH:
        return f"the provider target {shown} is over {MAX_TARGET_LENGTH} characters; {_FORMS}"
    if not target.isprintable() or any(character.isspace() for character in target):
        return f"the provider target {shown!r} holds spaces or control characters; {_FORMS}"
    problem = _form_problem(target)
    return None if problem is None else f"the provider target {shown!r} {problem}; {_FORMS}"


def canonical_target(target: str) -> str:
    """The form a usable ``target`` is matched in against a provider identity's target
    globs, naming what gRPC will dial: ``ADDR:PORT`` for an IP address (``[ADDR]:PORT`` for
    IPv6, compressed), ``dns:NAME:PORT`` for a host name (lower-cased, so a glob written for
    addresses never matches a name), ``unix:/normalised/path`` or ``unix-abstract:NAME`` (both
    percent-decoded, as gRPC decodes them); the port is 443 where none is named. A
    ``dns://AUTHORITY/`` target or several addresses stay as given, so only a glob for that
    exact text matches them."""
    scheme, colon, rest = target.partition(":")
    if colon and scheme == "unix":
        path = urllib.parse.unquote(rest[2:] if rest.startswith("//") else rest)
        return "unix:" + posixpath.normpath(path)
    if colon and scheme == "unix-abstract":
        return "unix-abstract:" + urllib.parse.unquote(rest)
    if colon and scheme in ("ipv4", "ipv6"):
        return target if "," in rest else _host_port(rest)
    if colon and scheme == "dns":
        if rest.startswith("///"):
            rest = rest[3:]  # no authority: the system's resolver, as dns:HOST
        return target if rest.startswith("//") else _host_port(rest)
    return _host_port(target)


def _host_port(text: str) -> str:
    host, port = _split_host_port(text)
    number = int(port) if port and port.isdigit() else 443
    bare = host[1:-1] if host.startswith("[") else host
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        return f"dns:{host.lower().rstrip('.')}:{number}"
    shown = f"[{address.compressed}]" if address.version == 6 else address.compressed
    return f"{shown}:{number}"


def _form_problem(target: str) -> str | None:
    scheme, colon, rest = target.partition(":")
    if colon and scheme in ("unix", "unix-abstract"):
        if scheme == "unix" and rest.startswith("//"):
            rest = rest[2:]
            if not rest.startswith("/"):
                return "needs an absolute path after unix://"
        return None if rest.strip("/") else "names no socket path"
    if colon and scheme in ("ipv4", "ipv6"):
        addresses = rest.split(",")
        for address in addresses:
            problem = _address_problem(address, version=4 if scheme == "ipv4" else 6)
            if problem:
                return problem
        return None
    if colon and scheme == "dns":
        if rest.startswith("//"):
            authority_end = rest.find("/", 2)
            if authority_end < 0:
                return "has no host after dns://AUTHORITY/"
            rest = rest[authority_end + 1 :]
        return _host_port_problem(rest, port_required=False)
    return _host_port_problem(target, port_required=True)


def _host_port_problem(text: str, *, port_required: bool) -> str | None:
    host, port = _split_host_port(text)
    if not host:
        return "names no host"
    if port is None:
        return "has no port" if port_required else _host_problem(host)
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        return f"has port {printable(port, 16)!r}, not a number from 1 to 65535"
    return _host_problem(host)


def _split_host_port(text: str) -> tuple[str, str | None]:
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return "", None
        host, after = text[: end + 1], text[end + 1 :]
        return host, (after[1:] if after.startswith(":") else None)
    if text.count(":") > 1:  # an IPv6 address without brackets and so without a port
        return text, None
    host, colon, port = text.partition(":")
    return host, (port if colon else None)


def _host_problem(host: str) -> str | None:
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return "has an invalid IPv6 address"
        return None
    if ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return "has an invalid address"
        return None
    return None if _HOSTNAME.fullmatch(host) else "has an invalid host name"


def _address_problem(address: str, *, version: int) -> str | None:
    host, port = _split_host_port(address)
    if port is not None and (not port.isdigit() or not 1 <= int(port) <= 65535):
        return "has a port that is not a number from 1 to 65535"
    bare = host[1:-1] if host.startswith("[") else host
    try:
        ipaddress.IPv4Address(bare) if version == 4 else ipaddress.IPv6Address(bare)
    except ValueError:
        return f"has {printable(address, 64)!r}, not an IPv{version} address"
    return None
