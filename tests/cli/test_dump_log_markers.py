"""`pykraft dump-log` shows a transaction marker of a partition log as Kafka's DumpLogSegments does."""

from pykraft.cli.dump_log import Decoding, batch_line, data_record_line
from pykraft.records import iter_batches
from pykraft.records.txn_markers import encode_txn_marker_batch


def test_a_commit_marker_line():
    batch = next(iter_batches(encode_txn_marker_batch(7, 2, 5, True, timestamp_ms=1000, base_offset=42)))
    (record,) = list(batch.records())
    line = data_record_line(batch, record, Decoding(decoder="data"))
    assert line.endswith("endTxnMarker: COMMIT coordinatorEpoch: 5"), line
    assert line.startswith("| offset: 42 CreateTime: 1000 keySize: 4 valueSize: 6"), line
    assert "producerId: 7 producerEpoch: 2" in batch_line(batch, 0, True)
    assert "isTransactional: true isControl: true" in batch_line(batch, 0, True)
