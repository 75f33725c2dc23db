"""Outbound request bookkeeping: at most one in-flight request per destination, timeouts and retry backoff."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class _Connection:
    correlation_id: int | None = None
    deadline_ms: int = 0
    backoff_until_ms: int = 0


class RequestManager:
    def __init__(self, request_timeout_ms: int, retry_backoff_ms: int) -> None:
        self._timeout = request_timeout_ms
        self._backoff = retry_backoff_ms
        self._connections: dict[int, _Connection] = {}
        self._next_correlation = 0

    def is_ready(self, node_id: int, now_ms: int) -> bool:
        conn = self._connections.get(node_id)
        return conn is None or (conn.correlation_id is None and now_ms >= conn.backoff_until_ms)

    def has_inflight(self, node_id: int) -> bool:
        conn = self._connections.get(node_id)
        return conn is not None and conn.correlation_id is not None

    def has_any_inflight(self) -> bool:
        return any(conn.correlation_id is not None for conn in self._connections.values())

    def on_send(self, node_id: int, now_ms: int) -> int:
        self._next_correlation += 1
        conn = self._connections.setdefault(node_id, _Connection())
        conn.correlation_id = self._next_correlation
        conn.deadline_ms = now_ms + self._timeout
        return self._next_correlation

    def on_response(self, node_id: int, correlation_id: int, now_ms: int, *, failed: bool = False) -> bool:
        """True if the response was expected; a stale or unknown response is dropped by the caller."""
        conn = self._connections.get(node_id)
        if conn is None or conn.correlation_id != correlation_id:
            return False
        conn.correlation_id = None
        conn.backoff_until_ms = now_ms + self._backoff if failed else 0
        return True

    def backoff(self, node_id: int, now_ms: int) -> None:
        conn = self._connections.setdefault(node_id, _Connection())
        conn.correlation_id = None
        conn.backoff_until_ms = now_ms + self._backoff

    def expire(self, now_ms: int) -> list[int]:
        """Destinations whose in-flight request timed out; they go into backoff."""
        expired = [n for n, c in self._connections.items() if c.correlation_id is not None and now_ms >= c.deadline_ms]
        for node_id in expired:
            self.backoff(node_id, now_ms)
        return expired

    def reset(self) -> None:
        """Forget in-flight requests (on epoch change their responses are no longer expected)."""
        for conn in self._connections.values():
            conn.correlation_id = None

    def is_backing_off(self, node_id: int, now_ms: int) -> bool:
        conn = self._connections.get(node_id)
        return conn is not None and conn.correlation_id is None and now_ms < conn.backoff_until_ms

    def next_deadline_ms(self, now_ms: int = 0) -> int | None:
        """The earliest request timeout or end of a retry backoff still ahead of `now_ms` (an expired backoff
        needs no wake-up: it would make every later wake-up "now")."""
        times = [c.deadline_ms if c.correlation_id is not None else c.backoff_until_ms
                 for c in self._connections.values() if c.correlation_id is not None or c.backoff_until_ms > now_ms]
        return min(times) if times else None
