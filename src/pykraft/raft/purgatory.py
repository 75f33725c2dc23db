"""`ThresholdPurgatory`: operations waiting for a watermark, Kafka's DelayedOperationPurgatory reduced to the one
shape pykraft needs everywhere.

An operation waits until a watermark reaches its threshold (`complete(value)` returns those with threshold <= value)
or fails when the leadership it was made under ends (`check(watermark, epoch)`). The tokens are the host's: an
asyncio future in the node, a reply address in the simulator; this module never completes anything itself, it
only says which tokens are done, in the order they were added, so both hosts answer in the same order.

Its users, one mechanism for all of them:
- acks=all produce (threshold: the batch's last offset + 1, watermark: the partition's high watermark) and
  DeleteRecords (threshold: the new log start, watermark: the low watermark), one purgatory each per leadership
  (`LeaderState`, so the epoch is implied and the leadership's end fails them all);
- the controller's writes (threshold: the last offset written + 1, watermark: the metadata log's high watermark,
  failed when the raft epoch they were written in is no longer the one this node leads): the node's
  `CommitWaiters` and the simulator's controller hosts.

Pure: no clock, no I/O. It lives in raft/, below both the broker and the node runtime, because a controller-only
process waits for its writes with it and never imports the broker.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
ANY_EPOCH = -1


@dataclass(frozen=True, slots=True)
class _Entry(Generic[T]):
    threshold: int
    epoch: int | None  # None: made while this node led nothing (failed by the first leadership it sees)
    token: T


class ThresholdPurgatory(Generic[T]):
    def __init__(self) -> None:
        self._entries: list[_Entry[T]] = []

    def add(self, threshold: int, token: T, epoch: int | None = ANY_EPOCH) -> None:
        """Wait until the watermark reaches `threshold`; `epoch` is the leadership it belongs to."""
        self._entries.append(_Entry(threshold, epoch, token))

    def complete(self, watermark: int) -> list[T]:
        """The tokens whose threshold the watermark reached, removed, oldest first."""
        done = [e.token for e in self._entries if e.threshold <= watermark]
        if done:
            self._entries = [e for e in self._entries if e.threshold > watermark]
        return done

    def check(self, watermark: int | None, epoch: int | None) -> tuple[list[T], list[T]]:
        """After an input of a leader: (failed, completed). Failing comes first: an operation of an older epoch
        must never be acknowledged by a watermark of a newer one. One pass (a leader checks after every input)."""
        failed: list[T] = []
        completed: list[T] = []
        waiting: list[_Entry[T]] = []
        for entry in self._entries:
            if entry.epoch != epoch:
                failed.append(entry.token)
            elif watermark is not None and entry.threshold <= watermark:
                completed.append(entry.token)
            else:
                waiting.append(entry)
        if failed or completed:
            self._entries = waiting
        return failed, completed

    def drain(self) -> list[T]:
        """Every token, removed (the leadership ended, or the process stops)."""
        tokens = [e.token for e in self._entries]
        self._entries = []
        return tokens

    def forget(self, gone: Callable[[T], bool]) -> None:
        """Drop the tokens nobody waits for any more (timed out): nothing will read their answer."""
        self._entries = [e for e in self._entries if not gone(e.token)]

    def thresholds(self) -> list[int]:
        return [e.threshold for e in self._entries]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[T]:
        return iter([e.token for e in self._entries])
