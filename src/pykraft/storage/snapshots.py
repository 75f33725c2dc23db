"""Snapshot files: `<20-digit end offset>-<10-digit epoch>.checkpoint` in the partition directory.

- Writing: bytes go to `<name>-<random>.checkpoint.part` (so a local snapshot and a download never share a file);
  `freeze()` fsyncs it, renames it to the final name and fsyncs the directory. A frozen file is therefore never
  torn: if one fails its checks, that is corruption.
- Reading: frozen files are immutable (only ever renamed or unlinked, never truncated), so readers mmap them and
  hand out memoryview slices without copying; FetchSnapshot reads unaligned slices.
- Deleting: rename to `.checkpoint.deleted`, then unlink (Kafka's order; leftovers are removed on open).
"""

from __future__ import annotations

import mmap
import os
import secrets
from collections.abc import Callable

from pykraft.raft.log import BufferSnapshotReader, SnapshotId
from pykraft.records import RecordsError, iter_batches

from .errors import CorruptSnapshotError
from .files import DELETED_SUFFIX, PARTIAL_SUFFIX, SNAPSHOT_SUFFIX, parse_snapshot_name, snapshot_name, sync_dir, write_all


class FileSnapshotWriter:
    """A `RawSnapshotWriter` over a `.checkpoint.part` file. Not thread safe."""

    def __init__(self, directory: str, snapshot_id: SnapshotId, on_frozen: Callable[[SnapshotId], None]) -> None:
        self._directory = directory
        self._id = snapshot_id
        self._on_frozen = on_frozen
        stem = snapshot_name(snapshot_id.offset, snapshot_id.epoch)[: -len(SNAPSHOT_SUFFIX)]
        self._part_path = os.path.join(directory, f"{stem}-{secrets.token_hex(8)}{PARTIAL_SUFFIX}")
        self._fd = os.open(self._part_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self._size = 0
        self._frozen = False
        self._closed = False

    @property
    def snapshot_id(self) -> SnapshotId:
        return self._id

    def size_in_bytes(self) -> int:
        return self._size

    def append(self, data: bytes | memoryview) -> None:
        assert not self._frozen and not self._closed, "append to a frozen or closed snapshot writer"
        write_all(self._fd, data)
        self._size += len(data)

    def is_frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        assert not self._closed, "freeze of a closed snapshot writer"
        if self._frozen:
            return
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1
        os.replace(self._part_path, os.path.join(self._directory, snapshot_name(self._id.offset, self._id.epoch)))
        sync_dir(self._directory)
        self._frozen = True
        self._on_frozen(self._id)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._frozen:
            os.close(self._fd)
            self._fd = -1
            try:
                os.unlink(self._part_path)
            except FileNotFoundError:
                pass


class FileSnapshotReader(BufferSnapshotReader):
    """A `RawSnapshotReader` over a frozen `.checkpoint` file, memory-mapped."""

    def __init__(self, path: str, snapshot_id: SnapshotId) -> None:
        self.path = path
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self._map: mmap.mmap | None = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        super().__init__(snapshot_id, memoryview(self._map) if self._map is not None else memoryview(b""))

    def validate(self) -> None:
        """Check every batch of the snapshot (CRC, framing). Raises `CorruptSnapshotError`."""
        try:
            for _ in iter_batches(self._data):
                pass
        except RecordsError as exc:
            raise CorruptSnapshotError(self.path, exc.position, str(exc)) from None


class SnapshotFiles:
    """The set of frozen snapshots of a partition directory."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.ids: set[SnapshotId] = set()

    def load(self) -> list[str]:
        """Find frozen snapshots, changing nothing. Returns the names of leftovers of interrupted writes and
        deletes, for `remove_leftovers` once every check of the open has passed."""
        leftovers = []
        for name in sorted(os.listdir(self.directory)):
            if name.endswith(PARTIAL_SUFFIX) or name.endswith(DELETED_SUFFIX):
                leftovers.append(name)
                continue
            parsed = parse_snapshot_name(name)
            if parsed is not None:
                self.ids.add(SnapshotId(*parsed))
        return leftovers

    def remove_leftovers(self, names: list[str]) -> None:
        for name in names:
            os.unlink(os.path.join(self.directory, name))
        if names:
            sync_dir(self.directory)

    def path(self, snapshot_id: SnapshotId) -> str:
        return os.path.join(self.directory, snapshot_name(snapshot_id.offset, snapshot_id.epoch))

    def reader(self, snapshot_id: SnapshotId) -> FileSnapshotReader | None:
        if snapshot_id not in self.ids:
            return None
        return FileSnapshotReader(self.path(snapshot_id), snapshot_id)

    def size(self, snapshot_id: SnapshotId) -> int:
        return os.stat(self.path(snapshot_id)).st_size

    def delete(self, snapshot_id: SnapshotId) -> None:
        """Rename to `.checkpoint.deleted`, then unlink. The caller fsyncs the directory when it needs to."""
        path = self.path(snapshot_id)
        deleted = path[: -len(SNAPSHOT_SUFFIX)] + DELETED_SUFFIX
        os.replace(path, deleted)
        os.unlink(deleted)
        self.ids.discard(snapshot_id)
