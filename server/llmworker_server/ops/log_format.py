"""How the server's log lines look: ``--log-format text`` (the default) or ``json``.

Text: ``2026-12-01 18:20:00,123 INFO llmworker.server.lifecycle stopped`` (local time).
JSON: one object a line with the keys ``time`` (UTC, ``2026-12-01T18:20:00.123Z``),
``level``, ``logger`` and ``message``, plus ``exception`` when a traceback goes with it and
the record's own fields (the start-up line's ``config``; a call line's ``tool``, ``status``,
``duration_ms`` and ``caller``, see ``call_log.py``).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Final

__all__ = ["FIELDS", "TEXT_FORMAT", "JsonFormatter", "configure_logging", "utc_stamp"]

TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s %(message)s"
FIELDS: Final = "fields"
"""The ``extra`` key whose mapping a JSON line adds as keys: ``extra={FIELDS: {...}}``."""


def utc_stamp(second: int) -> str:
    """``2026-12-01T18:20:00`` (a line adds ``.123Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


class JsonFormatter(logging.Formatter):
    """A record as one JSON object on one line."""

    def format(self, record: logging.LogRecord) -> str:
        second, millis = divmod(int(record.created * 1000), 1000)
        line: dict[str, object] = {
            "time": f"{utc_stamp(second)}.{millis:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        fields: object = record.__dict__.get(FIELDS)
        if isinstance(fields, dict):
            line.update({str(key): value for key, value in fields.items()})  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        return json.dumps(line, default=str, separators=(",", ":"))


def configure_logging(level: str, log_format: str) -> None:
    """Log to standard error at ``level`` in ``log_format``; start-up, shutdown and the port
    served are always reported (INFO at least for the lifecycle logger)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])
    logging.getLogger("llmworker.server.lifecycle").setLevel(
        min(logging.INFO, logging.getLevelNamesMapping()[level])
    )
