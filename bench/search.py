"""``make bench-search``: SearchTools' index and queries at 1,000 and 10,000 tools, in
process (the ranking alone, without gRPC).

The tools have varied names and descriptions drawn (seeded) from a small vocabulary, so a
query matches some of them, as in a real registry. Measured per size: the first search
(which indexes every tool), the p50 and p99 of 300 queries of 2-4 words, and a search
after one tool was added (the index follows the registry by writing that tool alone).

    python -m bench.search [--out bench/results/search-DATE.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import time
from pathlib import Path

from llmworker import Mutable, ToolFactory, ToolMeta, ToolServerHandle, Worker
from llmworker.v1 import tool_service_pb2 as pb
from llmworker_server.calls.tool_search import ToolSearch

REPO = Path(__file__).resolve().parent.parent
VERBS = ("get", "set", "list", "delete", "create", "update", "search", "send", "read",
         "write", "move", "copy", "sync", "check")  # fmt: skip
NOUNS = ("user", "order", "invoice", "file", "folder", "email", "calendar", "event", "ticket",
         "issue", "repo", "branch", "weather", "stock", "price", "report", "chart", "table",
         "row", "column", "message", "channel", "contact", "payment", "refund", "shipment",
         "product", "review", "comment", "image", "video", "document", "page", "note", "task",
         "project", "team")  # fmt: skip
WORDS = ("the", "current", "a", "an", "of", "for", "in", "with", "by", "from", "to", "every",
         "one", "all", "new", "old", "first", "last", "open", "closed", "pending", "public",
         "private", "remote", "local", "daily", "weekly", "monthly", "total", "count", "status",
         "summary")  # fmt: skip


class _Echo:
    async def execute(self, input_json: str) -> str:
        return input_json


class _Registry:
    def __init__(self, worker: Worker[Mutable]) -> None:
        self.worker = worker

    @property
    def handle(self) -> ToolServerHandle:
        return self.worker.tool_server_handle()


def definitions(count: int, rng: random.Random) -> list[ToolFactory]:
    made: list[ToolFactory] = []
    for index in range(count):
        verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
        text = " ".join(rng.choice((*WORDS, *NOUNS)) for _ in range(12))
        schema = {"type": "object", "properties": {noun: {"type": "string"}, "limit": {}}}
        meta = ToolMeta(f"{verb}_{noun}_{index}", f"{verb.title()} a {noun}: {text}.", schema)
        made.append(ToolFactory(meta, _Echo))
    return made


def measure(count: int) -> dict[str, float]:
    rng = random.Random(count)
    worker: Worker[Mutable] = Worker()
    worker.register_tools(definitions(count, rng))
    search = ToolSearch(_Registry(worker))  # type: ignore[arg-type]
    started = time.perf_counter()
    search.search(pb.SearchToolsRequest(query="weather report"), None)
    first = time.perf_counter() - started
    timings: list[float] = []
    for _ in range(300):
        words = rng.sample((*VERBS, *NOUNS, *WORDS), rng.randint(2, 4))
        request = pb.SearchToolsRequest(query=" ".join(words), limit=10)
        started = time.perf_counter()
        search.search(request, None)
        timings.append(time.perf_counter() - started)
    worker.register_tools(definitions(1, random.Random(-1)))
    started = time.perf_counter()
    search.search(pb.SearchToolsRequest(query="weather report"), None)
    after_change = time.perf_counter() - started
    timings.sort()
    return {
        "tools": count,
        "first_search_with_indexing_ms": round(first * 1000, 1),
        "query_p50_ms": round(statistics.median(timings) * 1000, 3),
        "query_p99_ms": round(timings[int(len(timings) * 0.99) - 1] * 1000, 3),
        "search_after_one_tool_added_ms": round(after_change * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="SearchTools ranking at 1,000 and 10,000 tools")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = [measure(count) for count in (1_000, 10_000)]
    for result in results:
        print(json.dumps(result))
    out = args.out or REPO / "bench/results" / f"search-{datetime.date.today().isoformat()}.json"
    today = datetime.date.today().isoformat()
    out.write_text(json.dumps({"date": today, "runs": results}, indent=1))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
