"""Client-side balancing across replicas with gRPC's own machinery: a service config with
``round_robin``, client-side health checking (``grpc.health.v1``) and, on a second channel
used only for tools annotated idempotent or read-only, a retry policy on UNAVAILABLE.

A call that fails with UNAVAILABLE may have run on the replica that went away: retrying it
could run it twice. So only a tool that says running it again changes nothing is retried;
gRPC's transparent retries (calls that never reached a server) apply to every call.
"""

from __future__ import annotations

import json
from typing import Final

from .._model.tool_meta import ToolMeta

__all__ = ["RETRYING_SERVICE_CONFIG", "SERVICE_CONFIG", "retry_is_safe"]

_BALANCED: Final[dict[str, object]] = {
    "loadBalancingConfig": [{"round_robin": {}}],
    "healthCheckConfig": {"serviceName": "llmworker.v1.ToolService"},
}
SERVICE_CONFIG: Final = json.dumps(_BALANCED)
"""round_robin over every address the target resolves to, skipping replicas whose health
check does not answer SERVING (a draining replica, a replica that is gone)."""
RETRYING_SERVICE_CONFIG: Final = json.dumps(
    {
        **_BALANCED,
        "methodConfig": [
            {
                "name": [{"service": "llmworker.v1.ToolService"}],
                "retryPolicy": {
                    "maxAttempts": 5,
                    "initialBackoff": "0.05s",
                    "maxBackoff": "1s",
                    "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"],
                },
            }
        ],
    }
)
"""``SERVICE_CONFIG`` plus retrying UNAVAILABLE up to four times (for idempotent tools)."""


def retry_is_safe(meta: ToolMeta | None) -> bool:
    """Whether a call to the tool ``meta`` describes may run again after UNAVAILABLE: it is
    annotated idempotent or read-only (an unknown tool: no)."""
    if meta is None:
        return False
    hints = meta.annotations
    return hints.idempotent is True or hints.read_only is True
