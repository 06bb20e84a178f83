"""docs/java-rust.md shows the settings the builds use: every line of its Maven, Cargo and
build.rs blocks is a line of tests/polyglot's pom.xml, Cargo.toml or build.rs (with the test's
own path to proto/ in place of a checkout's), and its buf template generates what Maven does."""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

import pytest

from tests.docs.test_pages import blocks_of
from tests.grpc_support import REPO

PAGE = REPO / "docs/java-rust.md"
POLYGLOT = REPO / "tests/polyglot"
# A checkout's proto/ on the page, and the test's.
PATHS = {
    "${project.basedir}/../llmworker/proto": "${proto.root}",
    '"../llmworker/proto"': '"../../../proto"',
}


def lines(text: str) -> list[str]:
    """Non-blank lines, stripped, without XML comments or Rust and TOML line comments."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    kept: list[str] = []
    for line in text.splitlines():
        line = re.sub(r"\s(//|#) .*$", "", line).strip()
        if line and not line.startswith(("//", "#")):
            kept.append(line)
    return kept


def shown(language: str) -> list[str]:
    found: list[str] = []
    for block in blocks_of(PAGE):
        if block.language == language:
            code = block.code
            for page_path, test_path in PATHS.items():
                code = code.replace(page_path, test_path)
            found.extend(lines(code))
    return found


@pytest.mark.parametrize(
    ("language", "built", "first"),
    [
        ("xml", "java/pom.xml", "<properties>"),
        ("toml", "rust/Cargo.toml", "[dependencies]"),
        ("rust", "rust/build.rs", "fn main() -> Result<(), Box<dyn std::error::Error>> {"),
    ],
)
def test_the_page_shows_the_settings_the_build_uses(language: str, built: str, first: str) -> None:
    used = set(lines((POLYGLOT / built).read_text()))
    page = shown(language)
    assert first in page, f"no {language} block shows {built}"
    if language == "rust":  # only the build.rs block: the others are client code
        start = page.index(first)
        page = page[start - 1 : page.index("}", start) + 1]
    missing = [line for line in page if line not in used]
    assert not missing, f"docs/java-rust.md shows lines {built} does not have: {missing}"


async def test_the_pages_buf_template_generates_the_service_only(tmp_path: Path) -> None:
    """The buf block, run with the protoc and protoc-gen-grpc-java the Maven build downloaded:
    the messages and stubs of llmworker.v1, and no com.google class."""
    plugins = POLYGLOT / "java/target/protoc-plugins"
    buf = REPO / "tools/node_modules/.bin/buf"
    for needed in (plugins, buf):
        if not needed.exists():
            pytest.fail(
                f"{needed.relative_to(REPO)} is missing: run 'make polyglot' and 'make test'"
            )
    [protoc] = plugins.glob("protoc-[0-9]*.exe")
    [grpc_java] = plugins.glob("protoc-gen-grpc-java-*.exe")
    [template] = [block.code for block in blocks_of(PAGE) if block.language == "yaml"]
    out = tmp_path / "gen"
    template = (
        template.replace("/path/to/protoc-gen-grpc-java", str(grpc_java))
        .replace("/path/to/protoc", str(protoc))
        .replace("gen/java", str(out))
    )
    (tmp_path / "buf.gen.java.yaml").write_text(template)
    process = await asyncio.create_subprocess_exec(
        str(buf), "generate", "--template", str(tmp_path / "buf.gen.java.yaml"),
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, output.decode()
    generated = {path.relative_to(out).as_posix() for path in out.rglob("*.java")}
    package = "io/github/llmworker/v1"
    assert {f"{package}/ToolServiceGrpc.java", f"{package}/CallResult.java"} <= generated
    assert all(name.startswith(package) for name in generated), sorted(generated)
