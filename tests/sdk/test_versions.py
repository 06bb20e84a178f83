"""The SDKs' versions follow the wire contract's: proto package ``llmworker.v1`` is major
version 1 of the npm package, and the Go SDK's ``Version``."""

from __future__ import annotations

import json
import re

from tests.grpc_support import REPO


def test_the_sdks_follow_the_wire_contracts_version() -> None:
    packages = {
        match
        for path in (REPO / "proto/llmworker").rglob("*.proto")
        for match in re.findall(r"^package llmworker\.(v\d+);", path.read_text(), re.M)
    }
    assert len(packages) == 1, packages
    (contract,) = packages
    npm = json.loads((REPO / "sdk/typescript/package.json").read_text())["version"]
    assert f"v{npm.split('.')[0]}" == contract, npm
    go = (REPO / "sdk/go/llmworker/client.go").read_text()
    assert f'const Version = "{contract}"' in go
    assert f"llmworker{contract}" in (REPO / "buf.gen.sdk-go.yaml").read_text()
