"""Exceptions the admin client raises. Every one has a one-line `str()` that the CLI prints as is.

- `AdminError`: the server answered with an error that retrying will not fix (Kafka's name + its message).
- `UnreachableError`: no bootstrap address ever answered before the deadline.
- `DeadlineError`: retriable errors (no leader yet, NOT_LEADER_OR_FOLLOWER, time-outs) until the deadline.
- `OutcomeUnknownError`: a voter change that may or may not have been applied (see client.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from pykraft.protocol.errors import ErrorCode

__all__ = [
    "AdminClientError",
    "AdminError",
    "DeadlineError",
    "OutcomeUnknownError",
    "UnreachableError",
]


class AdminClientError(Exception):
    """Base of everything the admin client raises on purpose."""


class AdminError(AdminClientError):
    """A non-retriable Kafka error code from the server."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        self.code = code
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}" if self.message else self.code.name


class UnreachableError(AdminClientError):
    """Every attempt at every bootstrap address failed before a single answer came back."""

    def __init__(self, kind: str, failures: Sequence[tuple[str, int, str]]) -> None:
        self.kind = kind  # "controller" or "server", after the flag that named the addresses
        self.failures = tuple(failures)
        super().__init__(str(self))

    def __str__(self) -> str:
        detail = "; ".join(f"{_address(host, port)}: {reason}" for host, port, reason in self.failures)
        return f"cannot reach any bootstrap {self.kind} ({detail})"


class DeadlineError(AdminClientError):
    """Gave up after `deadline_ms` of retriable failures; `last` says what the last attempt saw."""

    def __init__(self, what: str, deadline_ms: int, last: str) -> None:
        self.what = what
        self.deadline_ms = deadline_ms
        self.last = last
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.what} did not complete within {self.deadline_ms} ms (last attempt: {self.last})"


class OutcomeUnknownError(AdminClientError):
    """A voter change was sent, and no answer tells whether it was applied.

    Raised when an attempt timed out or lost its connection after the request left, or the leader changed
    while the request was pending, and then either the deadline passed or a retry met the conflict the
    earlier attempt would itself have caused (DUPLICATE_VOTER after an add, VOTER_NOT_FOUND after a remove).
    """

    def __init__(self, what: str, detail: str) -> None:
        self.what = what
        self.detail = detail
        super().__init__(str(self))

    def __str__(self) -> str:
        return (f"outcome unknown: {self.what} may or may not have been applied ({self.detail}); "
                "check with `metadata-quorum describe --status`")


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
