"""What producers were told, as JSON lines (`pykraft-produce-history.jsonl`): the input of the pipeline's
acknowledged-history audit (Jepsen's lost / duplicated / phantom counts over the brokers' logs).

One line per record a producer sent, written once its outcome is known:
  {"topic": "events", "partition": 0, "offset": 41, "value_digest": "<sha256 hex of the value>",
   "outcome": "acked", "producer": "quickstart", "ts_ms": 1795880254672}
`outcome` is "acked" (the broker answered with this offset) or "failed" (an error, or no answer: the record may
or may not be in the log; partition and offset are then null when unknown). Every record the producers sent is in
the file, acked or not: a record in the log whose digest is in no line was sent by nobody (a phantom).

The pipeline computes the same digest with Spark's `sha2(value, 256)`; this module is shared by the quickstart,
the test harnesses and the pipeline (which reads only the file name and the field names from here).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import IO

PRODUCE_HISTORY_FILE = "pykraft-produce-history.jsonl"
ACKED, FAILED = "acked", "failed"
HISTORY_DDL = ("`topic` STRING, `partition` INT, `offset` BIGINT, `value_digest` STRING, `outcome` STRING, "
               "`producer` STRING, `ts_ms` BIGINT")


def value_digest(value: bytes | None) -> str | None:
    return None if value is None else hashlib.sha256(value).hexdigest()


class ProduceHistory:
    """Appends outcome lines to a file; safe to call from a client's callback threads."""

    def __init__(self, path: str, producer: str) -> None:
        self.path = path
        self.producer = producer
        self._lock = threading.Lock()
        self._file: IO[str] | None = open(path, "a", encoding="utf-8", buffering=1)

    def acked(self, topic: str, partition: int, offset: int, value: bytes | None) -> None:
        self._write(topic, partition, offset, value, ACKED)

    def failed(self, topic: str, value: bytes | None, partition: int | None = None) -> None:
        self._write(topic, partition, None, value, FAILED)

    def _write(self, topic: str, partition: int | None, offset: int | None, value: bytes | None,
               outcome: str) -> None:
        line = {"topic": topic, "partition": partition, "offset": offset, "value_digest": value_digest(value),
                "outcome": outcome, "producer": self.producer, "ts_ms": int(time.time() * 1000)}
        with self._lock:
            if self._file is not None:
                self._file.write(json.dumps(line, separators=(",", ":")) + "\n")

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> ProduceHistory:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
