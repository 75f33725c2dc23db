"""Metadata records out of the raft log, for every host of the image: the controller in a node process
(node/roles/controller_host.py) and in the simulator (sim/hosts/controller_node.py), and the broker
(node/roles/broker_host.py).

- `decode_value` / `metadata_records`: the metadata records of encoded batches, control batches skipped. A value
  that is not a metadata record (the quickstart's Produce values) is skipped and reported, never raised: the
  log is shared with any client that may write to it.
- `ReplayedAhead`: the offsets an active controller replayed when it appended them, before they committed. The
  committed replay skips them, and a controller that loses leadership with some still pending is rebuilt.
- `load_committed`: an image := the latest snapshot + the committed log (that rebuild); it refuses to build an
  image with records missing (IncompleteLogError) rather than return a wrong one.

Pure: the log is the raft core's `RaftLog` interface, nothing here does I/O of its own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeGuard

from pykraft.records import iter_batches
from pykraft.records.metadata.errors import MetadataRecordError
from pykraft.records.metadata.frame import decode_metadata_record
from pykraft.records.metadata.registry import FRAME_VERSION
from pykraft.records.simple_scan import simple_values

OnUndecodable = Callable[[int], None]  # told how many records held no metadata record


class ReplayTarget(Protocol):
    """QuorumController and the broker's MetadataCache."""

    def replay(self, record: Any, offset: int) -> None: ...

    def load_snapshot(self, records: Any, last_contained_offset: int) -> None: ...


def may_be_metadata_record(value: bytes | memoryview | None) -> TypeGuard[bytes | memoryview]:
    """False only for values a full decode refuses at its first byte: empty, or a one-byte frame version other
    than 1 (the quickstart's JSON values start with "{"). A first byte with the varint continuation bit goes on to
    the full decode, which reads the frame version as Kafka does. Skipping the full decode (copy, memoryview,
    exception) for those cuts the cost of a rejected value from ~4.0 to ~0.5 us."""
    if not value:
        return False
    return value[0] == FRAME_VERSION or value[0] >= 0x80


# may_be_metadata_record of a value, by its first byte (simple_values's `keep`)
_MAY_BE_METADATA = bytes(may_be_metadata_record(bytes([first])) for first in range(256))


def decode_value(value: bytes | memoryview | None) -> Any | None:
    """The metadata record a record value holds, or None when it holds none."""
    return _decode_candidate(value) if may_be_metadata_record(value) else None


def _decode_candidate(value: bytes | memoryview) -> Any | None:
    """decode_value of a value that passed `may_be_metadata_record`."""
    try:
        return decode_metadata_record(bytes(value))
    except MetadataRecordError:
        return None


def metadata_records(batches: bytes | memoryview, *, on_undecodable: OnUndecodable | None = None,
                     skip: Callable[[int], bool] | None = None, up_to: int | None = None,
                     on_batch: Callable[[Any], None] | None = None) -> Iterator[tuple[int, Any]]:
    """(offset, record) of every metadata record in `batches`, in log order. `skip(offset)` is asked before the
    value is decoded (an active controller's own records need no decoding); records after `up_to` end it;
    `on_batch` sees every batch header (control batches too), so a caller needs no second walk for them."""
    for batch in iter_batches(batches, verify_crc=False):
        if up_to is not None and batch.base_offset > up_to:
            return
        if on_batch is not None:
            on_batch(batch)
        if batch.is_control:
            continue
        whole = skip is None and (up_to is None or batch.base_offset + batch.record_count - 1 <= up_to)
        for offset, value in _offsets_values(batch, whole, on_undecodable):
            if up_to is not None and offset > up_to:
                return
            if skip is not None and skip(offset):
                continue
            decoded = _decode_candidate(value) if may_be_metadata_record(value) else None  # tested once, here
            if decoded is not None:
                yield offset, decoded
            elif on_undecodable is not None:
                on_undecodable(1)


def _offsets_values(batch: Any, whole: bool, on_undecodable: OnUndecodable | None) -> list[tuple[int, Any]]:
    """(offset, value) of a batch's records. `whole`: the caller takes every record of the batch (none skipped,
    none past its end), so the values that cannot be metadata records are counted here and left out. The usual
    shape is walked without building records (records/simple_scan.py, ~3x cheaper), anything else decoded."""
    if whole:
        values = simple_values(batch, _MAY_BE_METADATA)
        if values is not None:
            if on_undecodable is not None and batch.record_count > len(values):
                on_undecodable(batch.record_count - len(values))
            return values
    else:
        values = simple_values(batch)
        if values is not None:
            return values
    return [(record.offset, record.value) for record in batch.records()]


class ReplayedAhead:
    """Ascending, disjoint offset ranges replayed before they committed."""

    def __init__(self) -> None:
        self._ranges: deque[tuple[int, int]] = deque()

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def add(self, first: int, last: int) -> None:
        self._ranges.append((first, last))

    def clear(self) -> None:
        self._ranges.clear()

    def covers(self, offset: int) -> bool:
        """Was `offset` replayed already? Asked in log order by the committed replay, which consumes the ranges."""
        ranges = self._ranges
        while ranges and ranges[0][1] < offset:
            ranges.popleft()  # cannot happen in log order; kept so a gap never blocks the queue
        if ranges and ranges[0][0] <= offset:
            if offset == ranges[0][1]:
                ranges.popleft()
            return True
        return False


class IncompleteLogError(RuntimeError):
    """The committed image cannot be rebuilt: records it needs are neither in the usable snapshot nor the log."""


def load_committed(target: ReplayTarget, log: Any, committed_offset: int) -> None:
    """`target` := the latest snapshot within the committed log + the committed records after it. Raises
    IncompleteLogError when records up to `committed_offset` were deleted before the log start and no snapshot
    within the committed log holds them: a host whose committed offset lags its own snapshots (metadata_swarm seed
    6006749) would otherwise get a silently emptied image."""
    snapshot_id = log.latest_snapshot_id()
    start = 0
    if snapshot_id is not None and 0 < snapshot_id.offset <= committed_offset + 1:
        reader = log.read_snapshot(snapshot_id)
        if reader is not None:
            start = snapshot_id.offset
            target.load_snapshot([r for _, r in metadata_records(reader.records())], start - 1)
    if start == 0:
        target.load_snapshot((), -1)
    log_start = log.start_offset()
    if start < log_start and start <= committed_offset:
        raise IncompleteLogError(f"cannot rebuild the image up to offset {committed_offset}: the log starts at "
                                 f"{log_start}, the latest snapshot is {snapshot_id}")
    start = max(start, log_start)
    if start > committed_offset:
        return
    for offset, record in metadata_records(log.read(start, 2**62).records, up_to=committed_offset):
        target.replay(record, offset)
