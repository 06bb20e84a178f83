"""Facts the docs state that the code or the tree decides: they must agree."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import cast

import yaml

from llmworker._client.balancing import RETRYING_SERVICE_CONFIG
from llmworker._wire.status import CODES
from tests.grpc_support import REPO

DOCS = REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
# The packages of the module map: the library, the server and every directory of modules in them.
PACKAGES = sorted(
    directory
    for root in (REPO / "llmworker", REPO / "server" / "llmworker_server")
    for directory in (root, *root.iterdir())
    if directory.is_dir() and any(directory.glob("*.py"))
)


def test_every_reason_has_its_code_in_the_errors_table() -> None:
    errors = (DOCS / "errors.md").read_text()
    for reason, code in CODES.items():
        assert f"| `{reason.value}` | {code.name} |" in errors, reason


def test_the_replicas_page_gives_go_and_node_users_the_service_config_python_uses() -> None:
    replicas = (DOCS / "replicas.md").read_text()
    section = replicas.split("**Go and TypeScript clients**", 1)[1]
    block = section.split("```json", 1)[1].split("```", 1)[0]
    assert json.loads(block) == json.loads(RETRYING_SERVICE_CONFIG)


def test_the_module_map_has_one_line_per_package_naming_its_modules() -> None:
    design = (DOCS / "design.md").read_text()
    section = design.split("## Module map", 1)[1].split("\n## ", 1)[0]
    rows = {
        cells[0]: cells[1]
        for line in section.splitlines()
        if (cells := [cell.strip() for cell in line.strip("|").split(" | ")])[0].startswith("`")
    }
    for package in PACKAGES:
        name = f"`{package.relative_to(REPO).as_posix()}/`"
        assert name in rows, f"the module map has no line for {name}"
        if package.name == "v1":
            continue  # generated code: its line says what it is, not every file
        for module in sorted(package.glob("*.py")):
            if module.stem != "__init__":
                assert f"`{module.stem}`" in rows[name], f"{name} does not name {module.stem}"
    assert len(rows) == len(PACKAGES), "one line per package, no more"


def test_the_nav_lists_every_page_once() -> None:
    config = cast("dict[str, object]", yaml.safe_load((REPO / "mkdocs.yml").read_text()))
    listed = re.findall(r"[\w-]+\.md", json.dumps(config["nav"]))
    assert sorted(listed) == sorted(page.relative_to(DOCS).as_posix() for page in PAGES)


def test_the_readme_links_every_page_and_only_pages_that_exist() -> None:
    readme = (REPO / "README.md").read_text()
    targets = {target.split("#", 1)[0] for target in re.findall(r"\]\(([^)]+)\)", readme)}
    for target in targets:
        assert (REPO / target).is_file(), target
    assert {Path(target) for target in targets} >= {page.relative_to(REPO) for page in PAGES}


def test_the_readme_stays_short() -> None:
    assert len((REPO / "README.md").read_text().splitlines()) <= 250


def test_the_docs_stand_alone() -> None:
    for page in [REPO / "README.md", *PAGES]:
        text = page.read_text()
        assert "../shared" not in text, page.name
        assert "/work/" not in text, page.name


def _proto_reason_rows() -> dict[str, str]:
    """The reason -> code rows of the error tables in the protos' comments."""
    rows: dict[str, str] = {}
    for proto in sorted((REPO / "proto" / "llmworker" / "v1").glob("*.proto")):
        for line in proto.read_text().splitlines():
            found = re.match(r"//\s+([A-Z][A-Z_]+)\s+([A-Z][A-Z_]+)(\s|$)", line)
            if found and found.group(1) != "reason":
                rows.setdefault(found.group(1), found.group(2))
    return rows


def test_the_protos_error_tables_give_every_reason_its_code() -> None:
    rows = _proto_reason_rows()
    expected = {reason.value: code.name for reason, code in CODES.items()}
    assert {reason: rows.get(reason) for reason in expected} == expected
    assert set(rows) <= set(expected), "a proto names a reason the code does not have"


def test_the_demo_flag_names_every_demo_tool() -> None:
    from llmworker import tool_definitions
    from llmworker_server.demo_tools import DemoTools
    from llmworker_server.options import build_parser

    (demo,) = [action for action in build_parser()._actions if "--demo" in action.option_strings]  # pyright: ignore[reportPrivateUsage]
    for definition in tool_definitions(DemoTools()):
        name = definition()[0].name
        assert re.search(rf"\b{name}\b", demo.help or ""), f"--demo's help does not name {name}"
