"""Containment: a bug met while handling ONE request or response fails that request, never the node.

The boundaries (one catch each):
- inbound requests, on every listener (controller, broker, combined; forwarded requests included):
  `InboundHandler.__call__` answers UNKNOWN_SERVER_ERROR (per item where the response has no top-level error code,
  protocol/error_responses.py), or closes the connection when no answer can be built;
- work a request or a peer's response does on the core task: `NodeRuntime.submit_request` / raft_rpcs.py run it
  through `contained`, which hands the exception to that request's answer (the inbound boundary then answers it) or,
  for a response nobody waits for, records it here; the core task goes on with its next input;
- responses from peers outside the core task: the outbound exchanges (outbound.py) and the broker's requests to the
  active controller (broker_host.py).
Each failure is logged once, with its traceback, the API and the version, and counted per API in
`pykraft_request_handler_errors_total{api=...}` (node/runtime/metrics.py).

Failures of the node itself (a durable write that failed, a broken effect) are not contained: they still stop it.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from pykraft.protocol.apis import ApiKey

_log = logging.getLogger("pykraft.node")

Failed = Callable[[Exception], None]


def api_name(api_key: int) -> str:
    """Kafka's name of an API key (`ApiKey` spelling), or the number for one pykraft does not know."""
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)


class HandlerErrors:
    def __init__(self) -> None:
        self.by_api: Counter[str] = Counter()

    def record(self, api_key: int, version: int, exc: BaseException, what: str) -> None:
        """One failure of `what` ("request", "response from node 2", ...) of api_key/version: log and count it."""
        name = api_name(api_key)
        self.by_api[name] += 1
        _log.error("%s %s (api key %d) v%d failed, the node goes on: %r", what, name, api_key, version, exc,
                   exc_info=exc)

    @property
    def total(self) -> int:
        return sum(self.by_api.values())


def contained(fn: Callable[[int], Any], failed: Failed) -> Callable[[int], Any]:
    """`fn` as a core-task input that cannot stop the core task: an exception goes to `failed`, the input returns
    no Ready (effects the core queued before raising go out with its next Ready, in order)."""
    def run(now_ms: int) -> Any:
        try:
            return fn(now_ms)
        except Exception as exc:  # the point: one request's bug must not end the core task
            failed(exc)
            return None
    return run


def recorder(errors: HandlerErrors, message: Any, what: str) -> Failed:
    """A `failed` callback that records the failure of `message` (a request or response) in `errors`."""
    def failed(exc: Exception) -> None:
        errors.record(int(message.__api_key__), int(message.__version__), exc, what)
    return failed


def fail_answer(answer: Any, otherwise: Failed | None = None) -> Failed:
    """A `failed` callback for work done on behalf of one request: its answer gets the exception (and the inbound
    boundary answers, logs and counts it). An answer already given cannot: then `otherwise` gets it."""
    def failed(exc: Exception) -> None:
        if not answer.done():
            answer.set_exception(exc)
        elif otherwise is not None:
            otherwise(exc)
    return failed
