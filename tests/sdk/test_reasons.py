"""Each SDK has one error type per reason the server sends, named after it: the Go SDK's
``byReason`` table and the TypeScript SDK's ``ERROR_CLASSES`` map every ``Reason`` to the
type whose name is the reason in CamelCase (TOOL_NOT_FOUND: ToolNotFound), and nothing else."""

from __future__ import annotations

import re

from llmworker._wire.status import Reason
from tests.grpc_support import REPO


def camel(reason: str) -> str:
    return "".join(word.capitalize() for word in reason.split("_"))


EXPECTED = {reason.value: camel(reason.value) for reason in Reason}


def test_the_go_sdk_has_the_type_of_every_reason() -> None:
    source = (REPO / "sdk/go/llmworker/errors.go").read_text()
    table = dict(
        re.findall(
            r'^\t"([A-Z_]+)": +func\(e \*Failure\) error \{ return (\w+)\{e\} \},$', source, re.M
        )
    )
    assert table == EXPECTED
    for name in EXPECTED.values():
        assert re.search(rf"^\t{name} +struct\{{ \*Failure \}}$", source, re.M), name


def test_the_typescript_sdk_has_the_class_of_every_reason() -> None:
    source = (REPO / "sdk/typescript/src/errors.ts").read_text()
    table = dict(re.findall(r"^  ([A-Z_]+): (\w+),$", source, re.M))
    assert table == EXPECTED
    for name in EXPECTED.values():
        assert f"export class {name} extends LlmworkerError {{}}" in source, name
