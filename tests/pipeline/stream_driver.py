"""A Spark driver process running the `kraft` streaming query until it is killed (test_stream_kill.py SIGKILLs
it mid-stream): `python -m tests.pipeline.stream_driver BOOTSTRAP OUT CHECKPOINT LOCAL_DIR`."""

from __future__ import annotations

import sys
import time

from pykraft.pipeline import session

RECORDS_PER_TRIGGER = 60


def main(bootstrap: str, out: str, checkpoint: str, local_dir: str) -> None:
    spark = session("local[1]", app_name="pykraft-stream-driver", local_dir=local_dir,
                    extra={"spark.sql.shuffle.partitions": "1"})
    stream = (spark.readStream.format("kraft").option("bootstrap", bootstrap)
              .option("maxRecordsPerTrigger", str(RECORDS_PER_TRIGGER)).load())
    query = (stream.writeStream.format("parquet").option("checkpointLocation", checkpoint)
             .trigger(processingTime="200 milliseconds").start(out))
    print("started", flush=True)
    while query.isActive:  # until SIGKILL
        time.sleep(1)
    raise SystemExit(f"the query ended: {query.exception()}")


if __name__ == "__main__":
    main(*sys.argv[1:5])
