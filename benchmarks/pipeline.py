"""The Spark pipeline's decoding throughput against the single-process decoder, measured in the same run.

A generated 3-node metadata log (default 5,000,000 records in all: the same segment on each of 3 nodes, 1000
PartitionChangeRecords per batch, a `.index` entry per batch so large segments split) is decoded
- by `pykraft dump-log --json`'s code path (`cli/dump_log.dump_file`, one process, output to /dev/null);
- by the `kafka-log` data source with metadata decoding (the same work: batches, records, metadata payloads),
  written to Parquet, at local[1] and at local[2]; and without metadata decoding (the plain record columns).
Spark's session start-up is reported apart (it is a fixed cost, not throughput), including the first use of a
Python data source (on a tiny log). The pipeline's decoder alone (decode.py in one process, no Spark) is timed
too: it tells the decoding apart from Spark's own per-row cost (Arrow to JVM rows, Parquet).

The ceiling: Spark's own cost for this table, measured in the same session. A Python data source (`ceiling`,
defined here) whose tasks yield one real decoded Arrow batch (the first 65,536 rows of node 1's segment) again and
again, as many rows per partition as the real job's partitions hold, written to Parquet the same way. No decoding,
no file reads: what is left is what Spark adds to any Python source producing these rows (the Arrow stream from the
worker, Arrow to JVM rows, the Parquet writer). The real job's rate is printed against it: the absolute goal (0.8 M
records/s) depends on the machine (this benchmark's single-process figure went from 88-93 s at stop 23-24 to 228-259 s
at stop 25), the ceiling moves with it.

Under load (a shared machine), wall times stretch; the CPU seconds of each path are printed too (this process and
every process it started: Spark's JVM and its Python workers), a measure other work on the machine barely moves.
The plain job and the ceiling are timed `--repeats` times each (default 3) in adjacent pairs whose order alternates
(the machine's load moves between two runs, and a JIT still warming up favours whichever runs second); their
medians are compared, and each pair's ratio is printed beside them (the spread says how far to trust the median).

Then `pykraft analyze` on small inputs against a bare Spark session counting one row, in the same run
(analyze_speed.py: the quickstart's directories, the same at --at-offset, a simulator export).

Run: `.venv/bin/python benchmarks/pipeline.py [--records N] [--dir D] [--quickstart DIR] [--no-analyze]
[--repeats N]` (or `make bench`). Goals (issue 30, same-run yardsticks): the plain decode job >= 0.9x the ceiling's rate; local[2] >= 1.6x
the single process; each analyze <= 5x the bare session.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from kio.static.primitive import i32

from analyze_speed import measure as measure_analyze  # benchmarks/ is on the path as the script's folder
from analyze_speed import report as analyze_lines
from pykraft.cli.dump_log import dump_file
from pykraft.records import SimpleRecord, encode_batch, set_base_offset
from pykraft.records.metadata import PartitionChangeRecordV2, encode_metadata_record
from pykraft.storage import MetaProperties, write_meta_properties

PER_BATCH = 1000
NODES = (1, 2, 3)


def generate(root: Path, records: int) -> int:
    """Each node's `__cluster_metadata-0/00000000000000000000.log` (+ `.index`); returns records per node."""
    per_node = -(-records // len(NODES) // PER_BATCH) * PER_BATCH
    topic_id = uuid.UUID(int=7)
    values = [SimpleRecord(encode_metadata_record(PartitionChangeRecordV2(
        partition_id=i32(i % 50), topic_id=topic_id, isr=(i32(1), i32(2), i32(3)), leader=i32(1 + i % 3),
        replicas=None, removing_replicas=None, adding_replicas=None, directories=None,
        eligible_leader_replicas=None, last_known_elr=None))) for i in range(PER_BATCH)]
    template = bytearray(encode_batch(values, base_offset=0, partition_leader_epoch=1, timestamp_ms=1_700_000_000_000))
    first = root / "node-1" / "data" / "__cluster_metadata-0"
    first.mkdir(parents=True)
    with open(first / f"{0:020d}.log", "wb") as log, open(first / f"{0:020d}.index", "wb") as index:
        for base in range(0, per_node, PER_BATCH):
            set_base_offset(template, base)
            index.write(struct.pack(">ii", base + PER_BATCH - 1, log.tell()))
            log.write(template)
    for node in NODES:
        data = root / f"node-{node}" / "data"
        if node != 1:
            shutil.copytree(first, data / "__cluster_metadata-0")
        write_meta_properties(str(data), MetaProperties("BenchClusterAAAAAAAAAAA", node, uuid.uuid4()))
    return per_node


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system, with reaped children) of this process and all its live descendants (Linux)."""
    children: dict[int, list[tuple[int, list[str]]]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        children.setdefault(int(fields[1]), []).append((int(name), fields))
    ticks, pending = 0, [os.getpid()]
    with open(f"/proc/{os.getpid()}/stat") as f:
        own = f.read().rsplit(")", 1)[1].split()
    ticks += sum(int(x) for x in own[11:15])
    while pending:
        for pid, fields in children.get(pending.pop(), []):
            ticks += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
            pending.append(pid)
    return ticks / os.sysconf("SC_CLK_TCK")


def single_process(root: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of dump-log's code path over every node's segment."""
    started, cpu = time.perf_counter(), time.process_time()
    with open(os.devnull, "w") as sink:
        for path in sorted(root.glob("node-*/data/__cluster_metadata-0/*.log")):
            assert dump_file(path, as_json=True, out=sink) == []
    return time.perf_counter() - started, time.process_time() - cpu


def decoder_alone(root: Path) -> dict[str, float]:
    """The pipeline's own decoder (decode.py) in this one process, no Spark: what a Spark task does per slice."""
    from pykraft.pipeline.decode import decode_slice
    from pykraft.pipeline.layout import find_files, split_segment

    timings = {}
    for label, metadata in (("metadata", True), ("plain", False)):
        started, cpu = time.perf_counter(), time.process_time()
        for file in find_files([str(root)], snapshots=False):
            for piece in split_segment(file):
                for _ in decode_slice(piece, metadata=metadata):
                    pass
        timings[label] = time.perf_counter() - started
        timings[f"{label}_cpu"] = time.process_time() - cpu
    return timings


def ceiling_source():
    """The `ceiling` data source class, defined here (not in pykraft): cloudpickle ships it to the workers."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from pykraft.pipeline.decode import decode_slice, spark_ddl
    from pykraft.pipeline.layout import find_files, split_segment

    class CeilingReader(DataSourceReader):
        """Partitions of `rows` rows each, yielded as copies of one real decoded batch (module docstring)."""

        def __init__(self, template: str, rows: list[int]) -> None:
            self.template, self.rows = template, rows

        def partitions(self):
            return [InputPartition(count) for count in self.rows]

        def read(self, partition):
            first = split_segment(find_files([self.template], snapshots=False)[0])[0]
            batch = next(decode_slice(first, metadata=False))
            left = partition.value
            while left > 0:
                yield batch if left >= batch.num_rows else batch.slice(0, left)
                left -= batch.num_rows

    class CeilingSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "ceiling"

        def schema(self) -> str:
            return spark_ddl(metadata=False)

        def reader(self, schema):
            rows = [int(n) for n in self.options["rows"].split(",")]
            return CeilingReader(self.options["template"], rows)

    return CeilingSource


def partition_rows(spark, root: Path) -> list[int]:
    """Rows in each input partition of the real plain job (the ceiling gets the same split)."""
    from pyspark.sql.functions import spark_partition_id

    counts = (spark.read.format("kafka-log").option("metadata", "false").load(str(root))
              .groupBy(spark_partition_id().alias("p")).count().collect())
    return [row["count"] for row in sorted(counts, key=lambda row: row["p"])]


def timed(write) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process tree) of one Spark job."""
    started, cpu = time.perf_counter(), tree_cpu_seconds()
    write()
    return time.perf_counter() - started, tree_cpu_seconds() - cpu


def spark_runs(root: Path, master: str, scratch: Path, repeats: int) -> dict[str, Any]:
    """Start-up, then the metadata job once, then the plain job and the ceiling `repeats` times each, in adjacent
    pairs whose order alternates (plain first, then the ceiling first...): on a shared machine the load moves
    between two runs, and a JIT that is still warming up favours whichever runs second. Each pair's ratio is kept;
    the plain and ceiling figures are the medians."""
    from pykraft.pipeline import session

    started = time.perf_counter()
    spark = session(master, app_name="bench", local_dir=str(scratch / "local"))
    spark.range(10).count()  # the first job's JVM warm-up belongs to start-up too
    # So does the first use of a Python data source: Spark loads its static data sources and forks the Python
    # workers (seconds, whatever the input size).
    spark.read.format("kafka-log").load(str(scratch / "tiny")).count()
    timings: dict[str, Any] = {"startup_s": time.perf_counter() - started}
    try:
        def kafka_log(metadata: str):
            out = str(scratch / f"parquet-{metadata}-{master}")
            return lambda: (spark.read.format("kafka-log").option("metadata", metadata).load(str(root))
                            .write.mode("overwrite").parquet(out))

        timings["metadata"], timings["metadata_cpu"] = timed(kafka_log("true"))
        spark.dataSource.register(ceiling_source())
        out = str(scratch / f"parquet-ceiling-{master}")

        def ceiling(rows: str):  # a new reader each time: DataFrameReader.option changes the reader it is called on
            return lambda: (spark.read.format("ceiling").option("template", str(root / "node-1"))
                            .option("rows", rows).load().write.mode("overwrite").parquet(out))

        ceiling("1000")()  # its first use, not timed
        rows = ",".join(str(n) for n in partition_rows(spark, root))
        jobs = {"plain": kafka_log("false"), "ceiling": ceiling(rows)}
        runs: dict[str, list[tuple[float, float]]] = {"plain": [], "ceiling": []}
        for i in range(repeats):
            for label in ("plain", "ceiling") if i % 2 == 0 else ("ceiling", "plain"):
                runs[label].append(timed(jobs[label]))
        for label, measured in runs.items():
            timings[label] = statistics.median(wall for wall, _ in measured)
            timings[f"{label}_cpu"] = statistics.median(cpu for _, cpu in measured)
        timings["pair_ratios"] = [c[0] / p[0] for p, c in zip(runs["plain"], runs["ceiling"])]
    finally:
        spark.stop()
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5_000_000)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--quickstart", type=Path, default=None, help="a quickstart's directory to analyze")
    parser.add_argument("--no-analyze", action="store_true", help="only the decoding figures")
    parser.add_argument("--repeats", type=int, default=3, help="plain/ceiling pairs timed at each master")
    args = parser.parse_args()
    scratch = Path(args.dir or tempfile.mkdtemp(prefix="pykraft-bench-pipeline-"))
    root = scratch / "cluster"
    shutil.rmtree(root, ignore_errors=True)
    per_node = generate(root, args.records)
    shutil.rmtree(scratch / "tiny", ignore_errors=True)
    generate(scratch / "tiny", PER_BATCH * len(NODES))
    total = per_node * len(NODES)
    size = sum(p.stat().st_size for p in root.rglob("*.log")) / 2**20
    print(f"generated {len(NODES)} nodes x {per_node:,} records = {total:,} records, {size:.0f} MiB")
    single, single_cpu = single_process(root)
    print(f"single process (dump-log --json code path): {single:7.1f} s  {total / single / 1e6:5.2f} M records/s "
          f"(CPU {single_cpu:.1f} s)")
    alone = decoder_alone(root)
    print(f"pipeline decoder alone (decode.py, one process, no Spark): with metadata {alone['metadata']:6.1f} s "
          f"{total / alone['metadata'] / 1e6:5.2f} M records/s, plain columns {alone['plain']:6.1f} s "
          f"{total / alone['plain'] / 1e6:5.2f} M records/s (CPU: with metadata {alone['metadata_cpu']:.1f} s, "
          f"plain {alone['plain_cpu']:.1f} s)")
    results = {}
    for master in ("local[1]", "local[2]"):
        results[master] = spark_runs(root, master, scratch, args.repeats)
        r = results[master]
        reused = " (JVM reused from local[1])" if master == "local[2]" else ""
        print(f"spark {master}: start-up {r['startup_s']:5.1f} s{reused} (apart); decoded into Parquet: with metadata "
              f"{r['metadata']:6.1f} s {total / r['metadata'] / 1e6:5.2f} M records/s, plain columns "
              f"{r['plain']:6.1f} s {total / r['plain'] / 1e6:5.2f} M records/s (CPU, JVM and Python workers included: "
              f"with metadata {r['metadata_cpu']:.1f} s, plain {r['plain_cpu']:.1f} s)")
        print(f"    ceiling (Spark's own cost of the plain table: one decoded batch repeated, no decoding): "
              f"{r['ceiling']:6.1f} s {total / r['ceiling'] / 1e6:5.2f} M records/s (CPU {r['ceiling_cpu']:.1f} s); "
              f"plain's rate / the ceiling's: {r['ceiling'] / r['plain']:.2f} (medians of {args.repeats}; each "
              f"pair's: {' '.join(f'{x:.2f}' for x in r['pair_ratios'])}; CPU: "
              f"{r['ceiling_cpu'] / r['plain_cpu']:.2f})")
    two = results["local[2]"]
    print(f"ratio local[2] (with metadata) / single process: {single / two['metadata']:.2f}x (goal >= 1.6x); "
          f"local[2] / local[1]: {results['local[1]']['metadata'] / two['metadata']:.2f}x; "
          f"local[2] plain: {total / two['plain'] / 1e6:.2f} M records/s = {two['ceiling'] / two['plain']:.2f}x the "
          f"same-run ceiling's {total / two['ceiling'] / 1e6:.2f} (goal >= 0.9x)")
    if not args.no_analyze:
        analyze_dir = scratch / "analyze"
        analyze_dir.mkdir(exist_ok=True)
        print("\n".join(analyze_lines(measure_analyze(analyze_dir, args.quickstart))))
    if not args.dir:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
