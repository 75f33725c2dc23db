"""`DataPlane`: the broker host's partition replicas, wired to the node (handlers, fetchers, timers).

- `handlers()`: Produce v3-v12, Fetch v4-v18, ListOffsets v1-v10, OffsetsForLeaderEpoch v2-v4, InitProducerId
  v0-v5, DeleteRecords v0-v2, DescribeLogDirs v1-v4, AlterReplicaLogDirs v1-v2 (replica_move.py), DescribeProducers
  v0, DescribeTopicPartitions v0 (Kafka 4.x's ranges; producer-id blocks from the controller, producer_id_api.py). Produce and Fetch naming `__cluster_metadata` go to the metadata log's paths as before.
- `open()` runs when the broker caught up with the metadata log: fix glibc's allocator thresholds for megabyte
  frames (runtime/allocator.py), recover the partition logs (the metadata log's
  directory lock is shared when metadata.log.dir is one of log.dirs), follow the metadata, start the fetchers
  and the maintenance timer (partition_maintenance.py: flush what flush.ms/flush.messages make due, never by
  default as in Kafka, in a worker thread; then retention and checkpoint files; every `MAINTENANCE_INTERVAL_S`),
  and the log cleaner's threads for compacted topics (log_cleaner.py).
- `sync_metadata()` / `progress()` / `isr_changed()` are the broker host's hooks: leadership from the cache,
  follower progress into the ISR manager, the ISR manager's high watermark back into the logs.
Until `open()` every partition answers NOT_LEADER_OR_FOLLOWER (or UNKNOWN_TOPIC_OR_PARTITION).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pykraft.broker.isr_rules import LeaderProgress
from pykraft.broker.topic_partitions import DEFAULT_PARTITION_SIZE_LIMIT
from pykraft.broker.metadata_cache import TopicPartition
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.storage import PartitionLogs

from pykraft.node.apis import (
    auto_create,
    delete_records_api,
    fetch_api,
    log_dirs_api,
    offsets_api,
    produce_api,
    producers_api,
    topic_partitions_api,
)
from pykraft.node.runtime.listeners import listener_name
from pykraft.node.apis.producer_id_api import ProducerIdBlocks, init_producer_id
from pykraft.node.runtime.allocator import release_free_heap, tune_for_large_frames
from pykraft.node.runtime.flusher import thread_runner
from pykraft.node.hosts.log_cleaner import CleanerConfig, LogCleaner
from pykraft.node.hosts.partitions import DataPlaneSettings, PartitionHost
from pykraft.node.hosts import dir_assignments
from pykraft.node.hosts.replica_fetcher import ReplicaFetchers
from pykraft.node.hosts.replica_move import ReplicaMover

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

    from pykraft.node.roles.broker_host import BrokerHost

_log = logging.getLogger("pykraft.node.data_plane")
MAINTENANCE_INTERVAL_S = 5.0


class _Closed:
    """AlterReplicaLogDirs before the partition logs are open: every partition NOT_LEADER_OR_FOLLOWER, retriable."""

    def request(self, topic: str, partition: int, path: str) -> ErrorCode:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER


def partition_size_limit(raw: Any) -> int:
    """max.request.partition.size.limit (DescribeTopicPartitions' page size cap); ValueError when not a positive
    integer."""
    text = str(raw.get("max.request.partition.size.limit", DEFAULT_PARTITION_SIZE_LIMIT)).strip()
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"max.request.partition.size.limit: {text!r} is not a positive integer")
    return int(text)


class DataPlane:
    def __init__(self, broker: BrokerHost, node_config: Any) -> None:
        self.broker = broker
        self.node_config = node_config
        self.settings = DataPlaneSettings.of(node_config.node_id, node_config.raw)
        auto_create.settings(node_config.raw)  # refuse a bad value at start, not at the first Metadata request
        self.cleaner_config = CleanerConfig.of(node_config.raw)  # likewise for the log cleaner's settings
        self.cleaner: LogCleaner | None = None
        self.host = PartitionHost(self.settings, broker.cache, None,
                                  report_progress=self._report_progress, high_watermark_of=broker.isr.high_watermark,
                                  now_ms=broker._now)
        self.fetchers: ReplicaFetchers | None = None
        self.mover: ReplicaMover | None = None
        self._reporting: set[tuple[str, int, Any]] = set()  # (topic, partition, directory id) being reported
        self._reports: set[asyncio.Task[bool | None]] = set()
        self._assignments_unsupported = False
        self._dir_ids: dict[str, Any] = {}  # log dir -> its meta.properties directory.id
        self.producer_ids = ProducerIdBlocks(node_config.node_id, lambda: broker.lifecycle.broker_epoch,
                                             self._ask_controller)
        self.partition_size_limit = partition_size_limit(node_config.raw)
        self._timer: asyncio.TimerHandle | None = None
        self._maintenance: asyncio.Task[None] | None = None
        # Set by the transaction coordinator's assembly (txn_wiring.py): InitProducerId with a transactional id goes
        # there, and a transaction's first write to a partition is verified through `verifier` (KIP-890 part 1),
        # or added to the transaction through `adder` for a client of transaction version 2 (Produce v12+).
        self.transactions: Any = None
        self.verifier: Any = None
        self.adder: Any = None

    # ---- opening and closing -----------------------------------------------------------------------------------
    def open(self, now_ms: int) -> None:
        tune_for_large_frames()  # megabyte frames reuse freed heap instead of faulting in fresh pages
        runtime = self.broker.runtime
        assert runtime is not None and runtime.storage is not None
        config = self.node_config
        held = {config.metadata_log_dir: runtime.storage.lock} if config.metadata_log_dir in config.log_dirs else {}
        self.host.logs = PartitionLogs(tuple(config.log_dirs), self.host.log_config_for, held_locks=held)
        self.host.load()
        clock = self.broker._now
        self.cleaner = LogCleaner(self.cleaner_config, self.host, tuple(config.log_dirs), clock)
        self.host.cleaning = self.cleaner.manager
        self.cleaner.start()
        self.fetchers = ReplicaFetchers(self.host, broker_epoch=lambda: self.broker.lifecycle.broker_epoch,
                                        address_of=self._address_of, send=runtime.outbound.to_broker,
                                        fetchers_per_source=self._fetchers_per_source)
        self.mover = ReplicaMover(self.host, self._moved)
        self._dir_ids = {d: dir_assignments.directory_id(d) for d in config.log_dirs}
        _log.info("broker %d: %d partition logs recovered", self.settings.broker_id, len(self.host.replicas))
        self.sync_metadata(now_ms)
        self._schedule_maintenance()
        release_free_heap()  # what starting up freed: the trim threshold above keeps it otherwise (allocator.py)

    def _fetchers_per_source(self) -> int:
        return self.host.topic_settings.broker_int("num.replica.fetchers", self.settings.num_replica_fetchers,
                                                   minimum=1)

    def close(self) -> None:
        if self.cleaner is not None:
            self.cleaner.stop()  # its threads swap nothing more: the logs close below
        if self._timer is not None:
            self._timer.cancel()
        if self._maintenance is not None:
            self._maintenance.cancel()  # a flush in its worker thread finishes on its own descriptors
        if self.fetchers is not None:
            for task in self.fetchers._tasks.values():  # the loop may be gone: cancel only
                task.cancel()
        if self.mover is not None:
            self.mover.close()
        if self.host.logs is not None:
            self.host.close()
            self.host.logs = None

    def _schedule_maintenance(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(MAINTENANCE_INTERVAL_S, self._maintain)

    def _maintain(self) -> None:
        if self.host.logs is not None:
            self._maintenance = asyncio.get_running_loop().create_task(self._maintain_once())

    async def _maintain_once(self) -> None:
        """Flush (in a worker thread), retention and checkpoints; the next round is scheduled even after a failed
        one, which is logged (the data stays in the page cache; the next flush tries again)."""
        try:
            await self.host.maintain_off_loop(self.broker._now, thread_runner())
        except OSError as exc:
            _log.error("broker %d: partition log maintenance failed: %s", self.settings.broker_id, exc)
        finally:
            if self.host.logs is not None:
                self._schedule_maintenance()

    # ---- the broker host's hooks -------------------------------------------------------------------------------
    def sync_metadata(self, now_ms: int) -> None:
        if self.host.logs is None or self.fetchers is None:
            return
        self.fetchers.assign(self.host.sync_metadata(now_ms))
        self._report_placements()

    def progress(self, partitions: list[TopicPartition], now_ms: int) -> dict[TopicPartition, LeaderProgress]:
        return self.host.progress(partitions, now_ms) if self.host.logs is not None else {}

    def isr_changed(self) -> None:
        if self.host.logs is not None:
            self.host.refresh_all()

    def _report_progress(self, progress: Mapping[TopicPartition, LeaderProgress]) -> None:
        broker = self.broker
        now = broker._now()
        # Progress of some partitions moves the high watermark of those only (the others' inputs did not change,
        # and a proposal the evaluation makes never lowers the maximal ISR): PartitionHost._after_leader_change
        # adopts it for its replica right after, so the other partitions are not refreshed on every fetch.
        broker._run("isr", broker.isr.update_progress(progress, now), refresh_partitions=False)

    def _address_of(self, broker_id: int) -> tuple[str, int] | None:
        """The broker's endpoint on the inter-broker listener (Kafka's replica fetchers connect there only: a broker
        registered without it cannot be fetched from)."""
        registration = self.broker.cache.registration(broker_id)
        wanted = self.node_config.inter_broker_listener_name
        endpoint = None if registration is None else next(
            (l for l in registration.listeners if l.name == wanted), None)
        return None if endpoint is None else (endpoint.host, endpoint.port)

    def _moved(self, replica: Any, directory: str) -> None:
        """A replica moved to `directory` (replica_move.py): tell the controller its directory id."""
        self._report_directory(replica, directory)

    def _report_placements(self) -> None:
        """With several log directories, Kafka's broker reports where each replica lives when the metadata says
        otherwise (its AssignmentsManager: new replicas are recorded UNASSIGNED by the controller then)."""
        logs = self.host.logs
        if logs is None or len(logs.log_dirs) < 2 or self._assignments_unsupported:
            return
        me = self.settings.broker_id
        for key, replica in self.host.replicas.items():
            partition = self.broker.cache.partition(*replica.tp)
            directory = logs.dir_of(*key)
            if partition is None or directory is None or me not in partition.replicas:
                continue
            if partition.directories[partition.replicas.index(me)] != self._dir_ids.get(directory):
                self._report_directory(replica, directory)

    def _report_directory(self, replica: Any, directory: str) -> None:
        dir_id = self._dir_ids.get(directory)
        key = (replica.topic, replica.partition, dir_id)
        if dir_id is None or key in self._reporting:
            return
        what = f"{replica.topic}-{replica.partition} in directory {dir_id}"

        def build() -> Any:
            return dir_assignments.assignment_request(self.settings.broker_id, self.broker.lifecycle.broker_epoch,
                                                      dir_id, replica.topic_id, replica.partition)

        self._reporting.add(key)
        task = asyncio.get_running_loop().create_task(dir_assignments.report(self._ask_controller, build, what))
        self._reports.add(task)

        def done(finished: asyncio.Task[bool | None]) -> None:
            self._reports.discard(finished)
            self._reporting.discard(key)
            if not finished.cancelled() and finished.exception() is None and finished.result() is None:
                self._assignments_unsupported = True  # metadata.version before 3.7-IV2: Kafka assigns none

        task.add_done_callback(done)

    # ---- requests ----------------------------------------------------------------------------------------------
    def handlers(self) -> dict[int, Any]:
        async def produce(decoded: DecodedRequest) -> Any:
            if produce_api.names_metadata_topic(decoded.message):
                return await self.broker._bound().inbound.produce_metadata(decoded)
            try:
                return await produce_api.produce(self.host, decoded.message, self.verifier, self.adder)
            except Exception:
                self._count_failed(decoded.message.topic_data, "name", "partition_data", "failed_produce_requests")
                raise  # the inbound boundary answers UNKNOWN_SERVER_ERROR (handler_errors.py)

        async def fetch(decoded: DecodedRequest) -> Any:
            if fetch_api.names_metadata_topic(decoded.message):
                return await self.broker._bound().inbound.answer_on_core(decoded)
            try:
                return await fetch_api.fetch(self.host, decoded.message, self.broker._now)
            except Exception:
                self._count_failed(decoded.message.topics, "topic", "partitions", "failed_fetch_requests")
                raise

        async def list_offsets(decoded: DecodedRequest) -> Any:
            return offsets_api.list_offsets(self.host, decoded.message)

        async def offsets_for_epoch(decoded: DecodedRequest) -> Any:
            return offsets_api.offsets_for_leader_epoch(self.host, decoded.message)

        async def init_pid(decoded: DecodedRequest) -> Any:
            if decoded.message.transactional_id is not None and self.transactions is not None:
                return await self.transactions.init_producer_id(decoded.message)
            return await init_producer_id(self.producer_ids, decoded.message)

        async def metadata(decoded: DecodedRequest) -> Any:
            return await auto_create.metadata(self.broker, decoded)

        async def delete_records(decoded: DecodedRequest) -> Any:
            return await delete_records_api.handle(self.host, decoded.message)

        async def describe_log_dirs(decoded: DecodedRequest) -> Any:
            return log_dirs_api.describe_log_dirs(self.host, tuple(self.node_config.log_dirs), decoded.message)

        async def alter_replica_log_dirs(decoded: DecodedRequest) -> Any:
            if self.mover is None:  # the logs are not open yet: no directory can take a replica now
                return log_dirs_api.alter_replica_log_dirs(_Closed(), decoded.message)
            return log_dirs_api.alter_replica_log_dirs(self.mover, decoded.message)

        async def describe_producers(decoded: DecodedRequest) -> Any:
            return producers_api.handle(self.host, decoded.message)

        async def describe_topic_partitions(decoded: DecodedRequest) -> Any:
            return topic_partitions_api.handle(self.broker.cache, decoded.message, self.partition_size_limit,
                                               listener_name(decoded))

        return {ApiKey.METADATA: metadata, ApiKey.PRODUCE: produce, ApiKey.FETCH: fetch, ApiKey.LIST_OFFSETS: list_offsets,
                ApiKey.OFFSET_FOR_LEADER_EPOCH: offsets_for_epoch, ApiKey.INIT_PRODUCER_ID: init_pid,
                ApiKey.DELETE_RECORDS: delete_records, ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs,
                ApiKey.DESCRIBE_PRODUCERS: describe_producers, ApiKey.DESCRIBE_TOPIC_PARTITIONS: describe_topic_partitions,
                ApiKey.ALTER_REPLICA_LOG_DIRS: alter_replica_log_dirs}

    def _count_failed(self, topics: Any, name_field: str, partitions_field: str, counter: str) -> None:
        """A Produce or Fetch whose handling raised: each partition of a known topic counts as failed (Kafka's
        Failed*RequestsPerSec count unexpected failures). Fetch v13+ names topics by id."""
        cache = self.host.cache
        for topic in topics:
            topic_id = getattr(topic, "topic_id", None)
            name = cache.topic_name(topic_id) if topic_id is not None else getattr(topic, name_field, None)
            if name is not None and cache.topic_id(name) is not None:
                counters = self.host.topic_stats.of(name)
                setattr(counters, counter, getattr(counters, counter) + len(getattr(topic, partitions_field)))

    async def _ask_controller(self, request: Any) -> Any | None:
        address = self.broker._controller_address()
        if address is None or self.broker.runtime is None:
            return None
        return await self.broker.runtime.outbound.forward(address[0], address[1], request)
