"""Record batch v2, control records and metadata records: how log bytes become typed values and back."""

from .batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    Record,
    RecordBatch,
    SimpleRecord,
    encode_batch,
    iter_batches,
    restamp_batch,
    set_base_offset,
    set_partition_leader_epoch,
)
from .compression import Compression
from .errors import (
    CorruptBatchError,
    MalformedBatchError,
    RecordsError,
    TruncatedBatchError,
    UnsupportedCompressionError,
)
from .simple_scan import encode_values

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "Compression",
    "CorruptBatchError",
    "MalformedBatchError",
    "Record",
    "RecordBatch",
    "RecordsError",
    "SimpleRecord",
    "TruncatedBatchError",
    "UnsupportedCompressionError",
    "encode_batch",
    "encode_values",
    "iter_batches",
    "restamp_batch",
    "set_base_offset",
    "set_partition_leader_epoch",
]
