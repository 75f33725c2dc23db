"""How `analyze` runs an input that fits one shuffle partition: every input table read as one partition
(tables.one_partition), no join broadcasting its smaller side, so a join, a window or a grouping needs no shuffle.
Only the partitioning changes: the rows stay the same (the tables of a whole analysis are compared with an
independent decoding in test_analyze.py and test_sim_analyze.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import Window
from pyspark.sql import functions as F

from pykraft.pipeline.run import BROADCAST_BYTES, size_shuffles
from pykraft.pipeline.tables import Tables, local_frame, one_partition

from .cluster_files import make_cluster

pytestmark = pytest.mark.spark
DDL = "`cluster_id` STRING, `node_id` INT, `offset` BIGINT"


@pytest.fixture
def restored(spark):
    """size_shuffles changes session settings: put back what the shared test session had."""
    keys = ("spark.sql.shuffle.partitions", "spark.sql.autoBroadcastJoinThreshold")
    before = {k: spark.conf.get(k) for k in keys}
    yield spark
    for key, value in before.items():
        spark.conf.set(key, value)


def _tables(spark, rows: list[tuple]) -> Tables:
    frame = lambda: local_frame(spark, rows, DDL).repartition(3)
    return Tables(frame(), frame(), frame(), None, frame(), frame(), frame())


def test_one_partition_keeps_every_row_and_leaves_missing_tables_missing(spark):
    rows = [("A", n % 3, n) for n in range(50)]
    tables = _tables(spark, rows)
    assert tables.records.rdd.getNumPartitions() == 3
    single = one_partition(tables)
    assert single.histories is None
    for frame in (single.records, single.snapshots, single.traces, single.produced, single.checkpoints,
                  single.aborted):
        assert frame.rdd.getNumPartitions() == 1
        assert sorted(tuple(r) for r in frame.collect()) == sorted(rows)


def test_small_input_plans_joins_and_windows_without_a_shuffle(restored, tmp_path: Path):
    spark = restored
    make_cluster(tmp_path, "SmallClusterAAAAAAAAAAA")
    assert size_shuffles(spark, [str(tmp_path)]) == 1
    assert spark.conf.get("spark.sql.autoBroadcastJoinThreshold") == "-1"
    single = one_partition(_tables(spark, [("A", n % 3, n) for n in range(50)]))
    along = Window.partitionBy("cluster_id", "node_id").orderBy("offset")
    query = (single.records.withColumn("previous", F.lag("offset").over(along))
             .join(single.snapshots.groupBy("cluster_id", "node_id").agg(F.max("offset").alias("last")),
                   ["cluster_id", "node_id"]))
    plan = query._jdf.queryExecution().executedPlan().toString()
    # The only exchanges are the test inputs' own repartition(3), below the coalesce: none for the join, the
    # window or the grouping, and no broadcast.
    assert plan.count("Exchange") == plan.count("Exchange RoundRobinPartitioning(3)") == 2, plan
    assert query.count() == 50
    by_node = {r["node_id"]: r["last"] for r in query.select("node_id", "last").distinct().collect()}
    assert by_node == {0: 48, 1: 49, 2: 47}


def test_large_input_keeps_spark_s_broadcast_threshold(restored, monkeypatch, tmp_path: Path):
    spark = restored
    make_cluster(tmp_path, "LargeClusterAAAAAAAAAAA")
    monkeypatch.setattr("pykraft.pipeline.run.SHUFFLE_BYTES", 1)  # every byte a shuffle partition's worth
    assert size_shuffles(spark, [str(tmp_path)]) > 1
    assert spark.conf.get("spark.sql.autoBroadcastJoinThreshold") == BROADCAST_BYTES
