"""The audits of the brokers' partition logs (user topics and the internal ones), as DataFrame work over the
`records` table, the replay's image and the nodes' traces. Each audit is a DataFrame of offending rows.

- `partition_replicas`: below the high watermark (the highest one a replica's `replication-offset-checkpoint`
  holds, else the reference's log end) every replica holds the reference replica's records (the image's leader,
  else the replica with the latest epoch and the longest log): same leader epoch, same bytes (timestamp, key,
  value), a batch CRC that holds. A replica is compared up to where Kafka's truncation would leave it (its last
  leader epoch's end in the reference's epochs, from the batches): a stale tail of an old leader is not a
  divergence. Offsets only one side holds are not compared (the log cleaner leaves gaps, DeleteRecords a later
  start). The first divergence of a replica is its lowest offending offset (broker, file, position, offset).
- `idempotence`: no (producer id, producer epoch, sequence range) is twice in a replica's log.
- `acknowledged`: what producers were told (client histories) against the logs: every acknowledged record is at
  its offset, with its value, on the partition's leader and every replica in its ISR (lost); no sent value is in
  the reference log more often than it was sent (duplicated); nothing is in it that no producer sent (phantom).
  An aborted transaction's records are no one's data (read_committed consumers drop them, the log cleaner removes
  them): they count neither as copies nor as phantoms, and an acknowledged record missing where an aborted
  transaction was (its ABORT marker in the log, or the replica's `.txnindex`) is not lost.
- `consumer_groups`: a group's committed offset for a partition (from `__consumer_offsets`) never moves backwards
  within a generation (a classic group's generation, a KIP-848 group's epoch; a deleted offset starts again);
  transactional offset commits count once their transaction committed, never when it aborted.
- `kip841_brokers`: KIP-841 as the brokers saw it: every ISR a partition leader used or proposed (its traced
  `isr_view`s) holds only brokers that were registered, unfenced and not shutting down in the metadata it had
  applied then.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .coordinator_payload import CONSUMER_GROUP_TYPES
from .group_payload import GROUP_METADATA, GROUP_TOPIC, OFFSET_COMMIT
from .jobs import Results
from .tables import Tables, partition_records

PARTITION = ["cluster_id", "topic", "partition"]
REPLICA = PARTITION + ["node_id"]
GROUP_EPOCH = CONSUMER_GROUP_TYPES[3]  # ConsumerGroupMetadata: a KIP-848 group's epoch


def txn_outcomes(user: DataFrame) -> DataFrame:
    """(replica, offset, txn_outcome) of every transactional data record: the type of the marker that ends its
    transaction, the producer's next control record on that replica (COMMIT or ABORT; null while still open)."""
    ahead = Window.partitionBy(*REPLICA, "producer_id").orderBy("offset").rowsBetween(Window.currentRow,
                                                                                      Window.unboundedFollowing)
    return (user.filter(F.col("is_transactional"))
            .withColumn("txn_outcome", F.first("control_type", ignorenulls=True).over(ahead))
            .filter(~F.col("is_control")).select(*REPLICA, "offset", "txn_outcome"))


def record_digest() -> Column:
    return F.xxhash64("timestamp", "key", "value")


def replica_extents(user: DataFrame) -> DataFrame:
    """Per replica: log end, last leader epoch, first offset held and the first segment's base offset."""
    segment_base = F.regexp_extract("file", r"(\d{20})\.log$", 1).cast("long")
    return user.groupBy(*REPLICA).agg((F.max("offset") + 1).alias("leo"), F.max("leader_epoch").alias("last_epoch"),
                                      F.min("offset").alias("first_offset"), F.min(segment_base).alias("segment_base"))


def reference_replicas(extents: DataFrame, image: DataFrame) -> DataFrame:
    """(partition, ref_node, ref_leo): the leader in the image when it holds the partition, else the replica with
    the latest leader epoch, then the longest log, then the lowest node id."""
    leaders = image.select(*PARTITION, "leader")
    rank = F.struct(F.coalesce(F.col("node_id") == F.col("leader"), F.lit(False)).alias("is_leader"), "last_epoch",
                    "leo", (-F.col("node_id")).alias("node"), F.col("node_id").alias("id"))
    return (extents.join(leaders, PARTITION, "left").groupBy(*PARTITION).agg(F.max(rank).alias("best"))
            .select(*PARTITION, F.col("best.id").alias("ref_node"), F.col("best.leo").alias("ref_leo")))


def audit_partition_replicas(tables: Tables, results: Results, user: DataFrame, extents: DataFrame,
                             refs: DataFrame) -> None:
    rows = user.select(*REPLICA, "file", "position", "offset", "leader_epoch", "crc_valid",
                       record_digest().alias("digest"))
    ref_rows = rows.join(refs, PARTITION).filter(F.col("node_id") == F.col("ref_node"))
    # Where each epoch starts in the reference's log; a replica is compared up to its last epoch's end there.
    starts = ref_rows.groupBy(*PARTITION, "leader_epoch").agg(F.min("offset").alias("epoch_start"))
    later = (extents.join(refs, PARTITION).filter(F.col("node_id") != F.col("ref_node"))
             .join(starts.withColumnRenamed("leader_epoch", "ref_epoch"), PARTITION, "left")
             .groupBy(*REPLICA, "leo", "ref_leo")
             .agg(F.min(F.when(F.col("ref_epoch") > F.col("last_epoch"), F.col("epoch_start"))).alias("next_start")))
    hwm = tables.checkpoints.groupBy(*PARTITION).agg(F.max("hwm").alias("checkpoint_hwm"))
    limits = (later.join(hwm, PARTITION, "left")
              .select(*REPLICA, F.least(F.coalesce("next_start", "ref_leo"), "leo",
                                        F.coalesce("checkpoint_hwm", "ref_leo")).alias("limit")))
    ref = ref_rows.select(*PARTITION, "offset", F.col("node_id").alias("reference_node"),
                          F.col("leader_epoch").alias("reference_epoch"), F.col("digest").alias("reference_digest"),
                          F.col("crc_valid").alias("reference_crc_valid"))
    compared = (rows.join(limits, REPLICA).filter(F.col("offset") < F.col("limit"))
                .join(ref, PARTITION + ["offset"]).filter(F.col("reference_crc_valid")))
    problem = (F.when(~F.col("crc_valid"), F.lit("batch CRC does not match its bytes"))
               .when(F.col("leader_epoch") != F.col("reference_epoch"),
                     F.format_string("leader epoch %d where the reference has %d", "leader_epoch", "reference_epoch"))
               .when(F.col("digest") != F.col("reference_digest"), F.lit("record differs from the reference's")))
    diverging = compared.withColumn("problem", problem).filter(F.col("problem").isNotNull())
    # The reference's own damaged copies below the high watermark.
    broken_ref = (ref_rows.join(hwm, PARTITION, "left").filter(~F.col("crc_valid") & (
        F.col("offset") < F.coalesce("checkpoint_hwm", "ref_leo")))
                  .select(*REPLICA, "file", "position", "offset", "leader_epoch",
                          F.col("node_id").alias("reference_node"), F.col("leader_epoch").alias("reference_epoch"),
                          F.lit("batch CRC does not match its bytes (the reference replica)").alias("problem")))
    columns = [*REPLICA, "file", "position", "offset", "leader_epoch", "reference_node", "reference_epoch",
               "problem"]
    results.audits["partition_replicas"] = diverging.select(*columns).unionByName(broken_ref.select(*columns))


def audit_idempotence(results: Results, user: DataFrame) -> None:
    batches = (user.filter(~F.col("is_control") & (F.col("producer_id") >= 0) & (F.col("base_sequence") >= 0))
               .groupBy(*REPLICA, "file", "position")
               .agg(F.min("base_offset").alias("base_offset"), F.first("producer_id").alias("producer_id"),
                    F.first("producer_epoch").alias("producer_epoch"), F.first("base_sequence").alias("base_sequence"),
                    F.first("last_offset_delta").alias("delta"))
               .withColumn("last_sequence", F.col("base_sequence") + F.col("delta")))
    same = Window.partitionBy(*REPLICA, "producer_id", "producer_epoch", "base_sequence", "last_sequence") \
        .orderBy("base_offset")
    results.audits["idempotence"] = (
        batches.withColumn("copy", F.row_number().over(same))
        .withColumn("first_copy_offset", F.first("base_offset").over(same)).filter(F.col("copy") > 1)
        .select(*REPLICA, "file", "position", F.col("base_offset").alias("offset"), "producer_id", "producer_epoch",
                "base_sequence", "last_sequence", "first_copy_offset"))


def audit_acknowledged(tables: Tables, results: Results, user: DataFrame, extents: DataFrame,
                       refs: DataFrame, outcomes: DataFrame) -> list[DataFrame]:
    """Returns the frames it persisted (the caller unpersists them once written)."""
    if tables.produced is None:
        return []
    produced = tables.produced.persist()  # read four times below: parse the client histories' JSON once
    aborted = outcomes.filter(F.col("txn_outcome") == "ABORT").select(*REPLICA, "offset")
    sent_topics = produced.select("cluster_id", "topic").distinct()
    rows = (user.filter(~F.col("is_control") & F.col("value").isNotNull())
            .join(F.broadcast(sent_topics), ["cluster_id", "topic"])
            .select(*REPLICA, "file", "position", "offset", F.sha2("value", 256).alias("value_digest")))
    image = results.tables["image_partitions"]
    holders = image.select(*PARTITION, F.array_distinct(F.concat(
        F.when(F.col("leader") >= 0, F.array("leader")).otherwise(F.array().cast("array<int>")), "isr"))
        .alias("holders")).select(*PARTITION, F.explode("holders").alias("node_id"))
    log_start = (tables.checkpoints.select(*REPLICA, "log_start").join(extents, REPLICA, "right")
                 .select(*REPLICA, F.coalesce("log_start", "segment_base").alias("log_start")))
    acked = produced.filter((F.col("outcome") == "acked") & F.col("offset").isNotNull())
    expected = (acked.join(holders, PARTITION).join(log_start, REPLICA, "left")
                .filter(F.coalesce(F.col("offset") >= F.col("log_start"), F.lit(True))))
    held = rows.select(*REPLICA, "offset", "file", "position", F.col("value_digest").alias("held_digest"))
    missing = (expected.join(held, REPLICA + ["offset"], "left")
               .filter(F.col("held_digest").isNull() | (F.col("held_digest") != F.col("value_digest"))))
    missing = _not_aborted(tables, missing, aborted)
    lost = (_not_compacted(user, missing)
            .select(F.lit("lost").alias("kind"), *REPLICA, "offset", "file", "position", "value_digest",
                    F.when(F.col("held_digest").isNull(), F.lit("acknowledged, not in the log at its offset"))
                    .otherwise(F.lit("acknowledged, another value at its offset")).alias("detail")))
    reference = (rows.join(refs, PARTITION).filter(F.col("node_id") == F.col("ref_node")).drop("ref_node", "ref_leo")
                 .join(aborted, REPLICA + ["offset"], "left_anti"))
    sent = produced.groupBy("cluster_id", "topic", "value_digest").agg(F.count("*").alias("sent"))
    counted = reference.join(sent, ["cluster_id", "topic", "value_digest"], "left")
    copies = Window.partitionBy("cluster_id", "topic", "value_digest").orderBy("partition", "offset")
    duplicated = (counted.filter(F.col("sent").isNotNull()).withColumn("copy", F.row_number().over(copies))
                  .filter(F.col("copy") > F.col("sent"))
                  .select(F.lit("duplicated").alias("kind"), *REPLICA, "offset", "file", "position", "value_digest",
                          F.format_string("copy %d of a value sent %d time(s)", "copy", "sent").alias("detail")))
    phantom = (counted.filter(F.col("sent").isNull())
               .select(F.lit("phantom").alias("kind"), *REPLICA, "offset", "file", "position", "value_digest",
                       F.lit("in the log, sent by no producer").alias("detail")))
    # Persisted: the audit and the per-topic figures below are written from the same rows (two writes would
    # otherwise compute every join above twice).
    offending = lost.unionByName(duplicated).unionByName(phantom).persist()
    results.audits["acknowledged"] = offending
    outcomes = produced.groupBy("cluster_id", "topic").agg(
        F.sum((F.col("outcome") == "acked").cast("long")).alias("acked"),
        F.sum((F.col("outcome") != "acked").cast("long")).alias("failed"))
    found = offending.groupBy("cluster_id", "topic").pivot("kind", ["lost", "duplicated", "phantom"]).count()
    results.tables["acknowledged_history"] = outcomes.join(found, ["cluster_id", "topic"], "left").fillna(0)
    return [produced, offending]


def _not_aborted(tables: Tables, missing: DataFrame, aborted: DataFrame) -> DataFrame:
    """`missing` without the records of aborted transactions: an offset some replica holds as aborted data, or an
    absent record inside an aborted transaction's range in a replica's `.txnindex` (the cleaner removed it; the
    index, which outlives the records, does not name their producer, so any absent record in the range is
    taken as the transaction's)."""
    missing = missing.join(aborted.select(*PARTITION, "offset").distinct(), PARTITION + ["offset"], "left_anti")
    spans = tables.aborted.select(*PARTITION, "first_offset", "last_offset").distinct().alias("span")
    inside = ((F.col("m.cluster_id") == F.col("span.cluster_id")) & (F.col("m.topic") == F.col("span.topic"))
              & (F.col("m.partition") == F.col("span.partition")) & F.col("m.held_digest").isNull()
              & F.col("m.offset").between(F.col("span.first_offset"), F.col("span.last_offset")))
    return missing.alias("m").join(F.broadcast(spans), inside, "left_anti")


def _not_compacted(user: DataFrame, missing: DataFrame) -> DataFrame:
    """`missing` without the records the log cleaner may have removed: a record absent from a replica that holds
    a later record with its key (the key read from any replica still holding the offset). A record no replica
    holds any more has no known key: it stays missing."""
    keyed = user.filter(F.col("key").isNotNull())
    key_at = keyed.groupBy(*PARTITION, "offset").agg(F.first("key").alias("key"))
    last_of_key = keyed.groupBy(*REPLICA, "key").agg(F.max("offset").alias("last_of_key"))
    return (missing.join(key_at, PARTITION + ["offset"], "left").join(last_of_key, REPLICA + ["key"], "left")
            .filter(F.col("held_digest").isNotNull() | ~F.coalesce(F.col("last_of_key") > F.col("offset"),
                                                                   F.lit(False))))


def audit_consumer_groups(results: Results, user: DataFrame, refs: DataFrame, outcomes: DataFrame) -> None:
    undecided_or_aborted = outcomes.filter(F.coalesce(F.col("txn_outcome"), F.lit("")) != "COMMIT")
    group_rows = (user.filter((F.col("topic") == GROUP_TOPIC) & F.col("record_type").isNotNull()
                              & ~F.col("is_control"))
                  .join(refs, PARTITION).filter(F.col("node_id") == F.col("ref_node"))
                  .join(undecided_or_aborted, REPLICA + ["offset"], "left_anti"))
    field = lambda name: F.get_json_object("payload", f"$.{name}")
    tagged = group_rows.select(
        "cluster_id", "node_id", "file", "position", "offset", "timestamp", "record_type",
        field("group").alias("group"),
        F.when(F.col("record_type") == GROUP_METADATA, field("generation").cast("int"))
        .when(F.col("record_type") == GROUP_EPOCH, field("epoch").cast("int")).alias("generation_record"),
        F.when(F.col("record_type") == OFFSET_COMMIT, field("topic")).alias("committed_topic"),
        F.when(F.col("record_type") == OFFSET_COMMIT, field("partition").cast("int")).alias("committed_partition"),
        field("offset").cast("long").alias("committed_offset"),
        F.coalesce(field("tombstone").cast("boolean"), F.lit(False)).alias("tombstone"),
        field("commitTimestamp").cast("long").alias("commit_timestamp"))
    up_to_here = Window.partitionBy("cluster_id", "group").orderBy("offset") \
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    with_generation = tagged.withColumn("generation", F.last("generation_record", ignorenulls=True).over(up_to_here))
    commits = with_generation.filter(F.col("record_type") == OFFSET_COMMIT)
    per_partition = ["cluster_id", "group", "committed_topic", "committed_partition"]
    resets = Window.partitionBy(*per_partition).orderBy("offset").rowsBetween(Window.unboundedPreceding,
                                                                              Window.currentRow)
    commits = commits.withColumn("incarnation", F.sum(F.col("tombstone").cast("int")).over(resets))
    results.tables["consumer_offsets"] = commits.filter(~F.col("tombstone")).select(
        "cluster_id", "group", F.col("committed_topic").alias("topic"),
        F.col("committed_partition").alias("partition"), "generation", "committed_offset", "commit_timestamp",
        F.col("offset").alias("log_offset"), "timestamp")
    along = Window.partitionBy(*per_partition, "incarnation", "generation").orderBy("offset")
    results.audits["consumer_groups"] = (
        commits.filter(~F.col("tombstone")).withColumn("previous_offset", F.lag("committed_offset").over(along))
        .filter(F.col("committed_offset") < F.col("previous_offset"))
        .select("cluster_id", "group", F.col("committed_topic").alias("topic"),
                F.col("committed_partition").alias("partition"), "generation", "committed_offset", "previous_offset",
                "node_id", "file", "position", "offset"))


def audit_kip841_brokers(tables: Tables, results: Results) -> None:
    views = (tables.traces.filter(F.col("event") == "isr_view")
             .select("cluster_id", F.col("node_id").alias("leader"), "ts_ms", "topic", "partition", "leader_epoch",
                     "isr", "metadata_offset", "reason", F.explode("isr").alias("broker_id"))
             .filter(F.col("broker_id") != F.col("leader")))
    history = results.tables["broker_history"].select("cluster_id", "broker_id", F.col("offset").alias("at"),
                                                      "state")
    view_key = ["cluster_id", "leader", "ts_ms", "topic", "partition", "leader_epoch", "metadata_offset", "reason",
                "broker_id"]
    states = (views.join(history, ["cluster_id", "broker_id"])
              .filter(F.col("at") <= F.col("metadata_offset"))
              .groupBy(*view_key).agg(F.max_by("state", "at").alias("state"), F.max("at").alias("state_offset")))
    results.audits["kip841_brokers"] = (
        states.filter(F.col("state") != "UNFENCED")
        .join(views.select(*view_key, "isr"), view_key)
        .select("cluster_id", F.col("leader").alias("node_id"), "ts_ms", "topic", "partition", "leader_epoch", "isr",
                "broker_id", "state", "state_offset", "metadata_offset", "reason"))


def log_audits(tables: Tables, results: Results) -> None:
    """The partition-log audits that need nothing from the replay."""
    audit_idempotence(results, partition_records(tables))


def image_audits(tables: Tables, results: Results) -> list[DataFrame]:
    """The partition-log audits that read the replay's image (leaders, ISRs) or broker history. The frames every
    audit shares (the partition records, each replica's extent, the reference replicas, the transactions'
    outcomes) are persisted: each audit's write would otherwise scan and shuffle them again. Returned so that the
    caller unpersists them once the audits are written."""
    user = partition_records(tables).persist()
    extents = replica_extents(user).persist()
    refs = reference_replicas(extents, results.tables["image_partitions"]).persist()
    outcomes = txn_outcomes(user).persist()
    audit_partition_replicas(tables, results, user, extents, refs)
    persisted = audit_acknowledged(tables, results, user, extents, refs, outcomes)
    audit_consumer_groups(results, user, refs, outcomes)
    audit_kip841_brokers(tables, results)
    return [user, extents, refs, outcomes, *persisted]
