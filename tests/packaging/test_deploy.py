"""deploy/: the Kubernetes manifests pass the schema and agree with each other, the image and
the server's flags; the image's health check passes against a serving server, and only then."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import grpc.aio
import pytest
import yaml
from grpc_health.v1 import health_pb2

from llmworker_server.cli import parse_args
from tests.grpc_support import REPO, ServerProcess, serve, wait_for_line

DEPLOY = REPO / "deploy"
MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
# The oldest release the manifests support (the preStop sleep action is on by default from
# 1.30) and the one where everything they use is GA; the validator bundles both schemas.
KUBERNETES_VERSIONS = ("1.30.0", "1.34.0")
SERVER_EXIT_MARGIN = 1  # the server exits within drain-delay + grace + 1 s of SIGTERM
DOCKER_STOP_TIMEOUT = 10  # `docker stop` sends SIGKILL after this long by default

Manifest = dict[str, Any]


def load_manifests() -> dict[str, Manifest]:
    """The objects of deploy/kubernetes by kind (one of each), the Services by
    "Service/<name>" (service.yaml's and service-headless.yaml's)."""
    by_key: dict[str, Manifest] = {}
    for path in MANIFESTS:
        for document in yaml.safe_load_all(path.read_text()):
            kind = document["kind"]
            key = f"{kind}/{document['metadata']['name']}" if kind == "Service" else kind
            assert key not in by_key, f"a second {key} in {path}"
            by_key[key] = document
    return by_key


@pytest.fixture(scope="module")
def manifests() -> dict[str, Manifest]:
    return load_manifests()


def pod_spec(manifests: dict[str, Manifest]) -> Manifest:
    spec: Manifest = manifests["Deployment"]["spec"]["template"]["spec"]
    return spec


def server_container(manifests: dict[str, Manifest]) -> Manifest:
    containers: list[Manifest] = pod_spec(manifests)["containers"]
    (container,) = containers
    return container


def flag_values(arguments: Sequence[str]) -> dict[str, str]:
    """``--flag=value`` arguments as {flag: value}, "" for a bare ``--flag``. deploy/ writes
    every value after "=", so that each argument is one whole setting."""
    values: dict[str, str] = {}
    for argument in arguments:
        assert argument.startswith("--"), f"{argument!r}: write it as --flag=value"
        flag, _, value = argument.partition("=")
        values[flag] = value
    return values


def port_of(address: str) -> int:
    return int(address.rpartition(":")[2])


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str

    def exec_form(self) -> list[str]:
        """The JSON array form: the command runs as PID 1, with no shell to eat SIGTERM."""
        words: object = json.loads(self.arguments)
        assert isinstance(words, list), f"{self.keyword} {self.arguments}: use the JSON form"
        return [str(word) for word in cast("list[object]", words)]


def final_stage() -> list[Instruction]:
    """The instructions of deploy/Dockerfile's last stage, continuations joined, comments and
    blank lines dropped (as Docker reads them)."""
    instructions: list[Instruction] = []
    pending = ""
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        keyword, _, arguments = (pending + stripped).partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip()))
        pending = ""
    stages = [i for i, instruction in enumerate(instructions) if instruction.keyword == "FROM"]
    return instructions[stages[-1] :]


def last(stage: list[Instruction], keyword: str) -> Instruction:
    """The ``keyword`` instruction that takes effect (the last one)."""
    found = [instruction for instruction in stage if instruction.keyword == keyword]
    assert found, f"deploy/Dockerfile has no {keyword} in its final stage"
    return found[-1]


def health_check_command() -> list[str]:
    options, _, command = last(final_stage(), "HEALTHCHECK").arguments.partition("CMD ")
    assert "--timeout=" in options, "a health check that hangs must count as failed"
    return Instruction("CMD", command).exec_form()


def image_server_arguments() -> list[str]:
    """What the image runs: ENTRYPOINT, then CMD."""
    stage = final_stage()
    entrypoint = last(stage, "ENTRYPOINT").exec_form()
    assert entrypoint[0] == "llmworker-server"
    return [*entrypoint[1:], *last(stage, "CMD").exec_form()]


def test_manifests_pass_the_kubernetes_schema_in_strict_mode() -> None:
    versions = [option for version in KUBERNETES_VERSIONS for option in ("-k", version)]
    result = subprocess.run(
        [sys.executable, "-m", "kubernetes_validate", "--strict", *versions, *MANIFESTS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # An unknown kind or apiVersion is only a WARN: every object must say "passed".
    passed = [line for line in result.stdout.splitlines() if " passed for resource " in line]
    assert len(passed) == len(load_manifests()) * len(KUBERNETES_VERSIONS), result.stdout


def test_the_shutdown_numbers_agree(manifests: dict[str, Manifest]) -> None:
    flags = flag_values(server_container(manifests)["args"])
    drain_delay, grace = float(flags["--drain-delay"]), float(flags["--grace"])
    pre_stop = server_container(manifests)["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pre_stop == drain_delay > 0
    # The kubelet counts the preStop in the period; SIGKILL must come after the server's exit.
    limit = pod_spec(manifests)["terminationGracePeriodSeconds"]
    assert limit >= pre_stop + drain_delay + grace + SERVER_EXIT_MARGIN


def test_probes_and_the_service_reach_the_grpc_port(manifests: dict[str, Manifest]) -> None:
    container = server_container(manifests)
    port = int(flag_values(container["args"])["--port"])
    named = {entry["name"]: entry["containerPort"] for entry in container["ports"]}
    assert named["grpc"] == port
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["grpc"]["port"] == port, probe
    (grpc_port,) = [
        p for p in manifests["Service/llmworker"]["spec"]["ports"] if p["name"] == "grpc"
    ]
    assert grpc_port["appProtocol"] == "grpc"
    assert named.get(grpc_port["targetPort"], grpc_port["targetPort"]) == port


def test_the_metrics_port_is_annotated_for_scraping(manifests: dict[str, Manifest]) -> None:
    annotations = manifests["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    container = server_container(manifests)
    port = port_of(flag_values(container["args"])["--metrics-address"])
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/path"] == "/metrics"
    assert int(annotations["prometheus.io/port"]) == port
    assert port in [entry["containerPort"] for entry in container["ports"]]


def test_every_selector_matches_the_pod_labels(manifests: dict[str, Manifest]) -> None:
    deployment = manifests["Deployment"]["spec"]
    labels = deployment["template"]["metadata"]["labels"]
    selectors = {
        "Deployment": deployment["selector"],
        "PodDisruptionBudget": manifests["PodDisruptionBudget"]["spec"]["selector"],
        "topologySpreadConstraints": pod_spec(manifests)["topologySpreadConstraints"][0][
            "labelSelector"
        ],
    }
    for owner, selector in selectors.items():
        assert set(selector) == {"matchLabels"}, owner
        assert selector["matchLabels"].items() <= labels.items(), owner
    for service in ("Service/llmworker", "Service/llmworker-headless"):
        assert manifests[service]["spec"]["selector"].items() <= labels.items(), service


def test_the_headless_service_names_every_ready_pod(manifests: dict[str, Manifest]) -> None:
    """service-headless.yaml, for client-side balancing over dns:///: no virtual IP, the same
    pods as service.yaml, their gRPC port, and no pod that is not ready."""
    headless = manifests["Service/llmworker-headless"]["spec"]
    assert headless["clusterIP"] == "None"
    assert headless.get("publishNotReadyAddresses", False) is False
    assert headless["selector"] == manifests["Service/llmworker"]["spec"]["selector"]
    container = server_container(manifests)
    named = {entry["name"]: entry["containerPort"] for entry in container["ports"]}
    (grpc_port,) = headless["ports"]
    assert (grpc_port["name"], grpc_port["appProtocol"]) == ("grpc", "grpc")
    assert named[grpc_port["targetPort"]] == int(flag_values(container["args"])["--port"])


def test_the_pod_runs_as_the_image_user_with_no_privileges(
    manifests: dict[str, Manifest],
) -> None:
    user, _, group = last(final_stage(), "USER").arguments.partition(":")
    assert int(user) != 0
    pod_security = pod_spec(manifests)["securityContext"]
    assert pod_security["runAsNonRoot"] is True
    assert (pod_security["runAsUser"], pod_security["runAsGroup"]) == (int(user), int(group))
    container = server_container(manifests)
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert {"cpu", "memory"} <= container["resources"]["requests"].keys()
    assert "memory" in container["resources"]["limits"]


def test_every_flag_in_deploy_is_one_the_server_has(manifests: dict[str, Manifest]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "llmworker_server", "--help"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "COLUMNS": "1000"},  # no flag split over two lines
    )
    assert result.returncode == 0, result.stderr
    known = set(re.findall(r"--[a-z][a-z0-9-]*", result.stdout))
    used = {
        "deploy/kubernetes/deployment.yaml": flag_values(server_container(manifests)["args"]),
        "deploy/Dockerfile": flag_values(image_server_arguments()),
    }
    for where, flags in used.items():
        assert flags.keys() <= known, f"{where}: not in --help: {sorted(flags.keys() - known)}"


def test_the_server_accepts_the_arguments_of_deploy(manifests: dict[str, Manifest]) -> None:
    """The server's own parsing and checks, e.g. plaintext beyond loopback needs its flag."""
    for arguments in (server_container(manifests)["args"], image_server_arguments()):
        config = parse_args(arguments)
        assert (config.host, config.internal) == ("0.0.0.0", False)


def test_the_image_stops_on_sigterm_within_docker_stop() -> None:
    assert last(final_stage(), "STOPSIGNAL").arguments == "SIGTERM"
    flags = flag_values(image_server_arguments())
    stop = float(flags.get("--drain-delay", 0)) + float(flags["--grace"]) + SERVER_EXIT_MARGIN
    assert stop <= DOCKER_STOP_TIMEOUT


def test_the_image_exposes_and_health_checks_the_ports_it_serves() -> None:
    flags = flag_values(image_server_arguments())
    exposed = {int(port) for port in last(final_stage(), "EXPOSE").arguments.split()}
    assert {int(flags["--port"]), port_of(flags["--metrics-address"])} <= exposed
    (address,) = re.findall(r"127\.0\.0\.1:(\d+)", health_check_command()[2])
    assert int(address) == int(flags["--port"])


async def test_the_probed_health_services_are_serving(manifests: dict[str, Manifest]) -> None:
    container = server_container(manifests)
    probes = ("startupProbe", "readinessProbe", "livenessProbe")
    services = {container[probe]["grpc"].get("service", "") for probe in probes}
    async with serve() as served, grpc.aio.insecure_channel(served.target) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        for service in services:
            reply = await check(health_pb2.HealthCheckRequest(service=service), timeout=10)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, service


def run_health_check(command: Sequence[str], port: int) -> subprocess.CompletedProcess[str]:
    """The image's HEALTHCHECK against 127.0.0.1:``port``, with this interpreter."""
    program, flag, source = command
    assert (program, flag) == ("python", "-c")
    source = re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{port}", source)
    return subprocess.run(
        [sys.executable, flag, source], capture_output=True, text=True, timeout=30
    )


async def test_the_image_health_check_passes_only_while_the_server_serves() -> None:
    command = health_check_command()
    process = ServerProcess(["--demo", "--no-internal", "--port", "0", "--drain-delay", "10"])
    try:
        port = await process.port()
        serving = await asyncio.to_thread(run_health_check, command, port)
        assert serving.returncode == 0, serving.stderr
        process.terminate()
        await wait_for_line(process, "signal received")
        draining = await asyncio.to_thread(run_health_check, command, port)
        # NOT_SERVING answered (no traceback): the server still serves while it drains.
        assert (draining.returncode, draining.stderr) == (1, "")
    finally:
        process.process.kill()  # the drain was seen: no need to wait it out
        process.stop()
    closed = await asyncio.to_thread(run_health_check, command, port)
    assert closed.returncode == 1
    assert "UNAVAILABLE" in closed.stderr


@pytest.mark.parametrize(("extras", "installed"), [("", "[server]"), ("otel", "[server,otel]")])
def test_the_image_installs_the_server_extra(extras: str, installed: str) -> None:
    # Plain `llmworker` is the library alone: the image's server needs `llmworker[server]`.
    # The requirement the builder's RUN line gives pip, expanded by the shell as docker would.
    found = re.search(r'install [^"]*("\$1[^"]*")', (DEPLOY / "Dockerfile").read_text())
    assert found, "deploy/Dockerfile installs no wheel"
    expanded = subprocess.run(
        ["sh", "-c", f"set -- /dist/llmworker.whl; echo {found.group(1)}"],
        env={"EXTRAS": extras, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert expanded.stdout.strip() == f"/dist/llmworker.whl{installed}"
