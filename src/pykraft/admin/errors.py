"""Exceptions the admin client raises. Every one has a one-line `str()` that the CLI prints as is.

- `AdminError`: the server answered with an error that retrying will not fix (Kafka's name + its message).
- `TopicError`: an `AdminError` for one topic of a CreateTopics / DeleteTopics / Metadata answer (`topic`;
  `code` is Kafka's error, e.g. TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION; `message` the server's text).
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
    "TopicError",
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


class TopicError(AdminError):
    """A per-topic error; `message` defaults to Kafka's wording for the common codes, so it can be printed as is."""

    def __init__(self, topic: str, code: ErrorCode, message: str | None = None) -> None:
        self.topic = topic
        super().__init__(code, message or _TOPIC_MESSAGES.get(code, "").format(topic=topic) or None)


_TOPIC_MESSAGES = {
    ErrorCode.TOPIC_ALREADY_EXISTS: "Topic '{topic}' already exists.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.UNKNOWN_TOPIC_ID: "This server does not host this topic ID.",
}


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
