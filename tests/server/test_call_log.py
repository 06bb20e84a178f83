"""The buffered call log: its line layout, when lines are written, and closing."""

from __future__ import annotations

import asyncio
import datetime
import io
import re
import time

from llmworker_server.ops.call_log import CallLog

LINE = re.compile(
    r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) INFO llmworker\.server\.calls "
    r"tool=(\S+) status=(\S+) duration_ms=(\d+\.\d{3})"
)


def parsed(text: str) -> list[tuple[datetime.datetime, str, str, float]]:
    lines: list[tuple[datetime.datetime, str, str, float]] = []
    for line in text.splitlines():
        match = LINE.fullmatch(line)
        assert match, f"unexpected call log line: {line!r}"
        at = datetime.datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f")
        lines.append((at, match[2], match[3], float(match[4])))
    return lines


async def test_lines_carry_time_tool_status_and_duration_in_call_order() -> None:
    stream = io.StringIO()
    log = CallLog(stream, interval=60)
    before = datetime.datetime.now()
    started = time.perf_counter()
    await asyncio.sleep(0.05)
    log.record("echo", "OK", started)
    log.record("calculate", "INVALID_ARGUMENT", time.perf_counter())
    assert stream.getvalue() == "", "nothing is written before the interval or a flush"
    log.flush()
    (first, second) = parsed(stream.getvalue())
    assert first[1:3] == ("echo", "OK")
    assert second[1:3] == ("calculate", "INVALID_ARGUMENT")
    assert 50 <= first[3] < 5_000
    assert 0 <= second[3] < 50
    after = datetime.datetime.now()
    margin = datetime.timedelta(milliseconds=5)
    assert before - margin <= first[0] <= second[0] <= after + margin
    log.close()


async def test_pending_lines_are_written_within_the_interval() -> None:
    stream = io.StringIO()
    log = CallLog(stream, interval=0.05)
    log.record("echo", "OK", time.perf_counter())
    for _ in range(100):
        if stream.getvalue():
            break
        await asyncio.sleep(0.01)
    assert [line[1:3] for line in parsed(stream.getvalue())] == [("echo", "OK")]
    log.record("echo", "CANCELLED", time.perf_counter())
    log.close()
    assert [line[2] for line in parsed(stream.getvalue())] == ["OK", "CANCELLED"]
    log.close()
    assert len(stream.getvalue().splitlines()) == 2, "closing twice writes nothing twice"


async def test_a_name_from_a_request_cannot_forge_or_split_a_line() -> None:
    stream = io.StringIO()
    log = CallLog(stream, interval=60)
    evil = [
        "x\n2099-01-01 00:00:00,000 INFO llmworker.server.calls tool=INJECTED status=OK",
        "a\rb\x1b[31m\u2028c",
        'q" status=OK duration_ms=1.000',
        "y" * 10_000,
    ]
    for name in evil:
        log.record(name, "NOT_FOUND", time.perf_counter())
    log.record("echo", "OK", time.perf_counter())
    log.flush()
    lines = stream.getvalue().splitlines()
    assert len(lines) == len(evil) + 1
    assert "INJECTED status=OK" not in "".join(line.split(" tool=", 1)[0] for line in lines)
    for line in lines[:-1]:
        assert line.endswith("status=NOT_FOUND duration_ms=" + line.rsplit("=", 1)[1])
        assert line.count(" status=") == 1 or '\\"' in line
        assert line.isprintable()
        assert len(line) < 300
    assert ' tool="x\\n2099-01-01' in lines[0]
    assert lines[-1].split(" ", 4)[4].startswith("tool=echo status=OK")


async def test_an_mcp_call_says_its_transport_and_a_grpc_call_says_nothing() -> None:
    stream = io.StringIO()
    log = CallLog(stream, interval=60)
    log.record("echo", "OK", time.perf_counter(), "agent", "mcp")
    log.record("echo", "OK", time.perf_counter(), "agent")
    log.record("echo", "OK", time.perf_counter(), "", "mcp")
    log.flush()
    mcp, grpc, anonymous = stream.getvalue().splitlines()
    assert mcp.endswith(" caller=agent transport=mcp")
    assert grpc.endswith(" caller=agent")
    assert anonymous.endswith(" transport=mcp")
    assert "caller=" not in anonymous
