"""Which MCP servers to import, and the names their tools get: flags, the mcpServers file,
the deterministic mapping of names the registry refuses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import mcp_types as types
import pytest

from llmworker import ToolError, ToolOutput
from llmworker_server.cli import parse_args
from llmworker_server.errors import ConfigError
from llmworker_server.mcp_import.definitions import imported_meta, output_of
from llmworker_server.mcp_import.naming import registry_name
from llmworker_server.mcp_import.settings import load_servers_file, server_from_flag

_VALID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_a_url_and_a_command_from_flags() -> None:
    http = server_from_flag("search=https://search.internal/mcp")
    assert (http.url, http.command, http.tool_prefix) == (
        "https://search.internal/mcp",
        (),
        "search",
    )
    stdio = server_from_flag("files=stdio:npx -y '@scope/server files' /srv")
    assert stdio.command == ("npx", "-y", "@scope/server files", "/srv")
    assert stdio.provider == "mcp server files"


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("search", "names no server"),
        ("=https://x/mcp", "server name"),
        ("bad name=https://x/mcp", "server name"),
        ("s=ftp://x/mcp", r"not an http\(s\) URL"),
        ("s=https://user:pw@x/mcp", "no credentials"),
        ("s=stdio:", "either a url or a command"),
        ("s=stdio:npx 'unclosed", "cannot be split"),
    ],
)
def test_bad_flags_say_what_to_fix(value: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        server_from_flag(value)


def test_the_mcp_servers_file(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret-token-value\n")
    token.chmod(0o600)
    path = tmp_path / "servers.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "files": {"command": "npx", "args": ["-y", "server"], "env": {"A": "1"}},
                    "web": {
                        "url": "http://127.0.0.1:9/mcp",
                        "tokenFile": str(token),
                        "include": ["search_*"],
                        "exclude": ["search_admin"],
                        "prefix": "",
                    },
                }
            }
        )
    )
    files, web = load_servers_file(path)
    assert files.command == ("npx", "-y", "server")
    assert files.env == {"A": "1"}
    assert web.token_file == token
    assert web.include == ("search_*",)
    assert web.exclude == ("search_admin",)
    assert web.tool_prefix == ""


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ("not json", "cannot read it as JSON"),
        ({"servers": {}}, "mcpServers"),
        ({"mcpServers": {"a": {"url": "http://x/mcp", "token": "x"}}}, "unknown key"),
        ({"mcpServers": {"a": {"command": "x", "args": "y"}}}, "args a list of strings"),
        ({"mcpServers": {"a": {"command": "x", "tokenFile": "/etc/hostname"}}}, "for a url"),
        (
            {"mcpServers": {"a": {"url": "http://x/mcp", "tokenFile": "/nonexistent"}}},
            "not a readable",
        ),
        ({"mcpServers": {"a": {"url": "http://x/mcp", "include": []}}}, "globs"),
        ({"mcpServers": {"a": {"url": "http://x/mcp", "prefix": "a.b"}}}, "prefix"),
        ({"mcpServers": {"a": "http://x/mcp"}}, "must be an object"),
    ],
)
def test_a_bad_servers_file_names_the_entry(tmp_path: Path, document: object, says: str) -> None:
    path = tmp_path / "servers.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    with pytest.raises(ConfigError, match=says):
        load_servers_file(path)


def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret-token-value\n")
    token.chmod(0o644)
    path = tmp_path / "servers.json"
    path.write_text(
        json.dumps({"mcpServers": {"a": {"url": "http://x/mcp", "tokenFile": str(token)}}})
    )
    with pytest.raises(ConfigError, match="chmod 600"):
        load_servers_file(path)


def test_the_command_line_refuses_repeated_names_and_a_bad_separator(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = parse_args(["--mcp-server", "a=http://127.0.0.1:9/mcp", "--require-approval", "a__*"])
    assert [server.name for server in config.mcp_servers] == ["a"]
    assert config.require_approval == ("a__*",)
    for argv, says in [
        (["--mcp-server", "a=http://x/mcp", "--mcp-server", "a=http://y/mcp"], "more than once"),
        (["--mcp-server", "a=http://x/mcp", "--mcp-tool-separator", "."], "separator"),
        (["--require-approval", "x*"], "add --mcp-server"),
    ]:
        with pytest.raises(SystemExit):
            parse_args(argv)
        assert says in capsys.readouterr().err


def test_names_that_fit_are_kept_and_others_mapped_the_same_way_every_time() -> None:
    assert registry_name("fs", "__", "read_file") == "fs__read_file"
    assert registry_name("", "__", "read_file") == "read_file"
    assert registry_name("fs", "-", "read") == "fs-read"
    dotted = registry_name("fs", "__", "files.read")
    assert _VALID.fullmatch(dotted)
    assert dotted.startswith("fs__files_read-")
    assert dotted == registry_name("fs", "__", "files.read")
    assert registry_name("files", "__", "docs.read") == "files__docs_read-72d187c9"  # the docs'

    assert dotted != registry_name("fs", "__", "files_read")  # no two names map to one
    long = registry_name("everything", "__", "x" * 80)
    assert _VALID.fullmatch(long)
    assert len(long) == 64
    assert long != registry_name("everything", "__", "x" * 81)


def test_a_tool_keeps_its_title_schemas_and_hints() -> None:
    tool = types.Tool(
        name="weather",
        title="Weather",
        description="Current weather",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
        output_schema={"type": "object", "properties": {"celsius": {"type": "number"}}},
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    meta = imported_meta(tool, "w__weather", requires_approval=True)
    assert (meta.name, meta.title, meta.description) == ("w__weather", "Weather", "Current weather")
    assert meta.input_schema["properties"] == {"city": {"type": "string"}}
    assert meta.output_schema is not None
    assert meta.requires_approval
    assert (meta.annotations.read_only, meta.annotations.open_world) == (True, False)
    tasks_only = types.Tool(
        name="research",
        input_schema={"type": "object"},
        execution=types.ToolExecution(task_support="required"),
    )
    with pytest.raises(ValueError, match="MCP task"):
        imported_meta(tasks_only, "research", requires_approval=False)
    huge = types.Tool(name="huge", description="x" * 20_000, input_schema={"type": "object"})
    with pytest.raises(ValueError, match="description"):
        imported_meta(huge, "huge", requires_approval=False)


def test_results_become_text_structured_output_attachments_or_a_failure() -> None:
    text = types.TextContent(type="text", text="hello")
    assert output_of(types.CallToolResult(content=[text]), "s") == "hello"
    structured = output_of(
        types.CallToolResult(content=[], structured_content={"celsius": 21.5}), "s"
    )
    assert structured == ToolOutput('{"celsius": 21.5}', {"celsius": 21.5})
    image = types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png")
    with_image = output_of(types.CallToolResult(content=[text, image]), "s")
    assert isinstance(with_image, ToolOutput)
    assert with_image.attachments[0].mime_type == "image/png"
    with pytest.raises(ToolError.ExecutionFailed, match="disk full"):
        output_of(
            types.CallToolResult(
                content=[types.TextContent(type="text", text="disk full")], is_error=True
            ),
            "s",
        )
    bad = types.ImageContent(type="image", data="not base64!", mime_type="image/png")
    with pytest.raises(ToolError.ExecutionFailed, match="image block"):
        output_of(types.CallToolResult(content=[bad]), "s")
