"""What a cleaner pass is given and gives back (storage/cleaner.py): the task its owner captures
(cleaner_manager.py), the host it asks for swaps and abort checks, and Kafka's CleanerStats."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .compaction_rules import ProducerLast, SegmentFacts
from .segment_swap import CleanedSegment
from .txn_index import AbortedTxn


class CleaningAborted(Exception):
    """The log was truncated, deleted or paused during the pass: stop, swap nothing more."""


@dataclass(frozen=True, slots=True)
class SourceSegment:
    facts: SegmentFacts
    path: str


@dataclass(frozen=True, slots=True)
class CleanTask:
    """What a pass needs of one log, captured by its owner (cleaner_manager.py)."""

    key: tuple[str, int]
    log_dir: str
    directory: str
    segments: tuple[SourceSegment, ...]  # the sealed segments below `first_uncleanable`, oldest first
    first_dirty: int
    first_uncleanable: int
    dirty_position: int  # byte position in the segment holding `first_dirty` where its mapping starts
    delete_retention_ms: int
    segment_bytes: int
    max_index_bytes: int
    index_interval: int
    producers: Mapping[int, ProducerLast]
    now_ms: int
    layout_version: int
    aborted: tuple[AbortedTxn, ...] = ()  # the aborted transactions overlapping the cleanable range (.txnindex)


@dataclass(slots=True)
class CleanerStats:
    """Kafka's CleanerStats (times from the monotonic clock, in seconds)."""

    start: float = field(default_factory=time.monotonic)
    map_done: float = -1.0
    end: float = -1.0
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages: int = 0
    buffer_utilization: float = 0.0

    @property
    def elapsed_s(self) -> float:
        return max(self.end - self.start, 0.0)

    @property
    def map_elapsed_s(self) -> float:
        return max(self.map_done - self.start, 0.0)


class CleanerHost(Protocol):
    def check_aborted(self, key: tuple[str, int]) -> None: ...  # raises CleaningAborted

    def swap(self, task: CleanTask, cleaned: CleanedSegment, old_bases: list[int]) -> bool: ...
