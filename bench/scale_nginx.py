"""nginx in front of the scale test's replicas: installed from the Debian packages when
missing, configured from ``deploy/nginx/nginx.conf.template``, driven by ghz, and its logs
read back call by call."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import grpc

__all__ = ["Failure", "NginxView", "ensure_nginx", "ghz", "ghz_outcomes", "nginx_config",
           "read_nginx"]  # fmt: skip

REPO: Final = Path(__file__).resolve().parent.parent
GHZ: Final = REPO / ".tools/go/bin/ghz"
TEMPLATE: Final = REPO / "deploy/nginx/nginx.conf.template"
GHZ_CONCURRENCY: Final = 16  # per ghz process (lookup, record): 32 through nginx
CALL_TIMEOUT_S: Final = 10.0
# [error] 7#7: *41 upstream prematurely closed connection while reading response header from
# upstream, client: unix:, server: , request: "POST …", upstream: "grpc://127.0.0.1:41023", …
_NGINX_ERROR: Final = re.compile(r"\[(?:error|warn)\] \d+#\d+: \*\d+ (.+?), client: ")
_NGINX_UPSTREAM: Final = re.compile(r'upstream: "grpc://([^"]+)"')
_CODE_NAMES: Final = {str(code.value[0]): code.name for code in grpc.StatusCode}


@dataclass
class Failure:
    tool: str
    status: str
    at_s: float
    request: str = ""  # a record call's token
    replica: str = ""  # nginx: the replica it failed on


def ensure_nginx() -> str:
    """The nginx binary, installed from the Debian packages when missing."""
    for candidate in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        sys.exit("nginx is missing: install it (Debian, Ubuntu: sudo apt-get install -y "
                 "--no-install-recommends nginx) and run again")  # fmt: skip
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "nginx"]
    output = ""
    for commands in ([install], [["apt-get", "update"], install]):  # lists stale or absent
        for command in commands:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
            output = done.stdout[-1500:] + done.stderr[-1500:]
        if os.access("/usr/sbin/nginx", os.X_OK):
            return "/usr/sbin/nginx"
    sys.exit(f"installing nginx failed ({' '.join(install)}):\n{output}")


def nginx_config(template: str, listen: str, upstreams: Sequence[str]) -> str:
    """The template with its placeholders filled; the replica line once per replica."""
    lines: list[str] = []
    for line in template.splitlines():
        if line.lstrip().startswith("#"):
            lines.append(line)
        elif "${LLMWORKER_REPLICA}" in line:
            lines.extend(line.replace("${LLMWORKER_REPLICA}", address) for address in upstreams)
        else:
            lines.append(line.replace("${LLMWORKER_LISTEN}", listen))
    left = [line for line in lines if "${" in line and not line.lstrip().startswith("#")]
    assert not left, f"unfilled placeholders in {TEMPLATE}: {left}"
    return "\n".join(lines) + "\n"


def ghz(tool: str, argument: str, socket: Path, seconds: float, report: Path) -> list[str]:
    """ghz calling ``tool`` through nginx for ``seconds``, each call with a unique argument
    that is also its ``x-request-id`` (which nginx logs)."""
    unique = f"ghz-{tool}-{{{{.RequestNumber}}}}"
    data = {"name": tool, "input_json": json.dumps({argument: unique})}
    return [str(GHZ), "--insecure", "--proto", "proto/llmworker/v1/tool_service.proto",
            "--import-paths", "proto", "--call", "llmworker.v1.ToolService/CallTool",
            "-d", json.dumps(data), "-m", json.dumps({"x-request-id": unique}),
            "-c", str(GHZ_CONCURRENCY), "--connections", "2", "-z", f"{seconds:g}s",
            "--duration-stop", "wait", "--timeout", f"{CALL_TIMEOUT_S:g}s",
            "--format", "json", "--output", str(report), f"unix://{socket}"]  # fmt: skip


@dataclass
class NginxView:
    """What nginx logged of the CallTool calls."""

    by_replica: Counter[str]  # the last replica each call was sent to
    retried: int  # calls sent to a second replica after connecting to the first failed
    failures: list[Failure]
    answered_records: list[str]  # the request ids (tokens) of the record calls answered OK
    error_log: dict[str, int]  # "replica: what", as nginx's error log says it


def read_nginx(prefix: Path, started_wall: float, names: Mapping[str, str]) -> NginxView:
    view = NginxView(Counter(), 0, [], [], {})
    for line in (prefix / "logs/access.log").read_text().splitlines():
        entry: dict[str, Any] = json.loads(line)
        if not entry["uri"].endswith("/CallTool"):
            continue
        tried = [names.get(a.strip(), a.strip()) for a in entry["upstream_addr"].split(",")]
        view.retried += len(tried) > 1
        view.by_replica[tried[-1]] += 1
        request: str = entry["request_id"]
        tool = request.split("-")[1] if request.count("-") >= 2 else "?"
        if entry["grpc_status"] == "0":
            if tool == "record":
                view.answered_records.append(request)
            continue
        # No grpc-status at all: nginx reset the stream (the client sees INTERNAL).
        code: str = entry["grpc_status"] or "13"
        status = _CODE_NAMES.get(code, code)
        at_s = entry["msec"] - started_wall
        view.failures.append(Failure(tool, status, at_s, request, tried[-1]))
    trouble: Counter[str] = Counter()
    for line in (prefix / "logs/error.log").read_text().splitlines():
        if match := _NGINX_ERROR.search(line):
            upstream = _NGINX_UPSTREAM.search(line)
            trouble[f"{names.get(upstream[1], upstream[1]) if upstream else '-'}: {match[1]}"] += 1
    view.error_log = dict(trouble.most_common())
    return view


def ghz_outcomes(report: Path) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(report.read_text())
    errors: dict[str, int] = parsed.get("errorDistribution") or {}
    return {
        "calls": parsed["count"],
        "rps": round(parsed["rps"], 1),
        "status": parsed.get("statusCodeDistribution") or {},
        "errors": dict(sorted(errors.items(), key=lambda item: -item[1])[:5]),
    }
