"""Closing a node's parts when some of them may fail (a vanished data directory fails the final flush, a full disk
the last trace line): every part is closed all the same, and the failures are kept to be reported, because a node
that cannot close its files must still stop."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Closer"]

_log = logging.getLogger("pykraft.node")


class Closer:
    def __init__(self) -> None:
        self.problems: list[str] = []  # one line each: "<what> failed: <why>"

    async def step(self, what: str, closing: Awaitable[Any]) -> None:
        try:
            await closing
        except Exception as exc:  # recorded; the other parts are closed all the same
            self._failed(what, exc)

    def call(self, what: str, close: Callable[..., Any], *args: Any) -> None:
        try:
            close(*args)
        except Exception as exc:  # as step()
            self._failed(what, exc)

    def _failed(self, what: str, exc: BaseException) -> None:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        self.problems.append(f"{what} failed: {reason}")
        _log.error("%s failed: %s", what, reason)
