"""The Spark Python data sources over Kafka's on-disk formats (`pyspark.sql.datasource`):

- `kafka-log`: segments of any partition directory (`__cluster_metadata-0`, a user topic's `topic-N`) under the
  given path(s); one input partition per segment, large segments split at `.index` positions (option
  `splitBytes`); by default the input is packed into about 8 partitions of equal bytes, 16-64 MiB each, a
  partition holding slices of one or two files, so that every core has work to the end (layout.py); Arrow batches.
  Option `metadata=true` adds record_type, record_version and payload (JSON) decoded with the project's codecs.
  A row's `file` is the segment's path below its node's data directory (`__cluster_metadata-0/<base>.log`):
  the node, directory id, topic and partition are columns of their own (layout.LogFile.relative says why).
- `kafka-snapshot`: `.checkpoint` files, with the snapshot id (end offset, epoch) as columns; always decoded.

Paths: `.load(path)`, or option `paths` holding several joined with os.pathsep. Readers hold only plain values
(they are pickled to the executors); files are opened in `read()`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .decode import decode_bytes, decode_slice, spark_ddl
from .layout import MIN_SPLIT_BYTES, FileSlice, LogFile, balanced_partitions, find_files, split_segment


def _paths(options: Mapping[str, str]) -> list[str]:
    if options.get("paths"):
        return [p for p in options["paths"].split(os.pathsep) if p]
    if options.get("path"):
        return [options["path"]]
    raise ValueError("kafka-log/kafka-snapshot: give a path (load(path) or option paths)")


def _flag(options: Mapping[str, str], name: str) -> bool:
    return str(options.get(name, "false")).lower() in ("true", "1", "yes")


class _SlicePartition(InputPartition):
    def __init__(self, pieces: list[FileSlice]) -> None:
        super().__init__(pieces)
        self.pieces = pieces


class KafkaLogReader(DataSourceReader):
    def __init__(self, paths: list[str], metadata: bool, split_bytes: int | None) -> None:
        self.paths = paths
        self.metadata = metadata
        self.split_bytes = split_bytes

    def partitions(self) -> list[InputPartition]:
        files = find_files(self.paths, snapshots=False)
        if self.split_bytes is None:
            return [_SlicePartition(group) for group in balanced_partitions(files)]
        return [_SlicePartition([p]) for f in files for p in split_segment(f, self.split_bytes)]

    def read(self, partition: InputPartition) -> Iterator:
        for piece in partition.pieces:  # type: ignore[attr-defined]
            yield from decode_slice(piece, metadata=self.metadata)


class KafkaLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> str:
        return spark_ddl(metadata=_flag(self.options, "metadata"))

    def reader(self, schema) -> DataSourceReader:
        split = int(self.options["splitBytes"]) if self.options.get("splitBytes") else None
        return KafkaLogReader(_paths(self.options), _flag(self.options, "metadata"), split)


class _FilePartition(InputPartition):
    def __init__(self, files: list[LogFile]) -> None:
        super().__init__(files)
        self.files = files


def packed(files: list[LogFile], grain: int = MIN_SPLIT_BYTES) -> list[list[LogFile]]:
    """Whole files in groups of about `grain` bytes, in order: a snapshot is small, and a Spark task per file
    costs more than reading it."""
    groups: list[list[LogFile]] = [[]]
    size = 0
    for f in files:
        length = os.path.getsize(f.path)
        if groups[-1] and size + length > grain:
            groups.append([])
            size = 0
        groups[-1].append(f)
        size += length
    return groups


class KafkaSnapshotReader(DataSourceReader):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def partitions(self) -> list[InputPartition]:
        # No snapshot anywhere: one empty partition, an empty table (not an error).
        return [_FilePartition(group) for group in packed(find_files(self.paths, snapshots=True))]

    def read(self, partition: InputPartition) -> Iterator:
        for file in partition.files:  # type: ignore[attr-defined]
            with open(file.path, "rb") as f:
                data = f.read()
            yield from decode_bytes(data, file, metadata=True, snapshot=True)


class KafkaSnapshotDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka-snapshot"

    def schema(self) -> str:
        return spark_ddl(metadata=True, snapshot=True)

    def reader(self, schema) -> DataSourceReader:
        return KafkaSnapshotReader(_paths(self.options))
