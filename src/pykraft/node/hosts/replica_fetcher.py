"""Replica fetchers: `num.replica.fetchers` tasks per source broker (Kafka's fetcher threads), each fetching the
partitions this broker follows from that leader that Kafka's hash assigns to it (broker_settings.fetcher_id). The
count may change without a restart (a dynamic broker config): `assign` runs on every metadata change and each
task re-reads its share every round, so a partition moves to its new task and a task left without partitions ends.

Each round sends one Fetch v17 (topic ids; ReplicaState = our broker id and broker epoch, KIP-903) with, per
partition, the log end offset as the fetch offset, the epoch of our last batch as LastFetchedEpoch and the leader
epoch from the metadata as CurrentLeaderEpoch. The answer, partition by partition, is decided by broker/replica_fetch.py (pure) and
carried out here; it is applied only if the partition still follows that leader in that epoch and the log end did
not move meanwhile:
- records -> appended as they came (offsets and epochs are the leader's), then the high watermark follows;
- DivergingEpoch -> truncate to where the histories agree (raft's `truncation_offset`, KIP-101/KIP-279 by
  epochs) and fetch again;
- NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH -> wait for metadata (the next round asks
  again); OFFSET_OUT_OF_RANGE with our log end below the leader's log start -> empty our log and restart it at
  the leader's log start (Kafka's truncateFullyAndStartAt).
An unreachable leader is retried after replica.fetch.backoff.ms. Metadata changes re-plan the tasks
(`assign`); a task whose source leads nothing for us any more ends.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Callable
from typing import Any

from kio.schema.fetch.v17 import request as fetch_v17
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i32Timedelta, i64

from pykraft.broker.broker_settings import fetcher_id
from pykraft.broker.replica_fetch import FetchAction, FetchPosition, decide
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.log import InvalidAppendError

from pykraft.node.hosts.partitions import PartitionHost, Replica

_log = logging.getLogger("pykraft.node.fetcher")
FETCH_VERSION = 17


class ReplicaFetchers:
    def __init__(self, host: PartitionHost, *, broker_epoch: Callable[[], int],
                 address_of: Callable[[int], tuple[str, int] | None],
                 send: Callable[[str, int, Any], Any], fetchers_per_source: Callable[[], int] = lambda: 1) -> None:
        self.host = host
        self._broker_epoch = broker_epoch
        self._address_of = address_of
        self._send = send
        self._fetchers = fetchers_per_source
        self._plan: dict[int, list[tuple[str, int]]] = {}
        self._tasks: dict[tuple[int, int], asyncio.Task[None]] = {}  # (source broker, fetcher id) -> its task
        self.rounds = 0
        self.truncations = 0
        self.lags: dict[tuple[str, int], int] = {}  # records behind the leader's high watermark, at the last answer

    def assign(self, plan: dict[int, list[tuple[str, int]]]) -> None:
        self._plan = plan
        followed = {key for keys in plan.values() for key in keys}
        self.lags = {key: lag for key, lag in self.lags.items() if key in followed}
        count = self._fetchers()
        for source, keys in plan.items():
            for fetcher in sorted({fetcher_id(topic, partition, count) for topic, partition in keys}):
                task = self._tasks.get((source, fetcher))
                if task is None or task.done():
                    self._tasks[(source, fetcher)] = asyncio.get_running_loop().create_task(
                        self._run(source, fetcher), name=f"replica-fetcher-{source}-{fetcher}")

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    async def _run(self, source: int, fetcher: int = 0) -> None:
        settings = self.host.settings
        while True:
            count = self._fetchers()
            keys = [k for k in self._plan.get(source, []) if self._follows(k, source)
                    and fetcher_id(k[0], k[1], count) == fetcher]
            if not keys:
                return
            address = self._address_of(source)
            response = None
            sent = {k: self._position(self.host.replicas[k]) for k in keys}
            if address is not None:
                response = await self._send(address[0], address[1], self._request(sent))
            self.rounds += 1
            if response is None or int(response.error_code) != ErrorCode.NONE:
                await asyncio.sleep(settings.replica_fetch_backoff_ms / 1000)
                continue
            if not self._apply(source, sent, response):
                await asyncio.sleep(settings.replica_fetch_backoff_ms / 1000)

    def max_lag(self) -> int:
        """Kafka's ReplicaFetcherManager MaxLag: the largest lag of a partition still followed (0 when none)."""
        lags = [lag for key, lag in self.lags.items()
                if (replica := self.host.replicas.get(key)) is not None and replica.leading is None]
        return max(lags, default=0)

    def _follows(self, key: tuple[str, int], source: int) -> bool:
        replica = self.host.replicas.get(key)
        return replica is not None and replica.leading is None and replica.leader_id == source

    @staticmethod
    def _position(replica: Replica) -> tuple[int, int, int]:
        """(leader epoch, fetch offset, last fetched epoch) of one partition."""
        log = replica.log
        entries = log.epoch_entries()
        return replica.leader_epoch, log.end_offset(), entries[-1][0] if entries else -1

    def _request(self, sent: dict[tuple[str, int], tuple[int, int, int]]) -> Any:
        settings = self.host.settings
        by_topic: dict[Any, list[Any]] = {}
        for key, (epoch, offset, last_epoch) in sent.items():
            replica = self.host.replicas[key]
            by_topic.setdefault(replica.topic_id, []).append(fetch_v17.FetchPartition(
                partition=i32(key[1]), current_leader_epoch=i32(epoch), fetch_offset=i64(offset),
                last_fetched_epoch=i32(last_epoch), log_start_offset=i64(replica.log.start_offset()),
                partition_max_bytes=i32(settings.replica_fetch_max_bytes)))
        return fetch_v17.FetchRequest(
            replica_state=fetch_v17.ReplicaState(replica_id=BrokerId(settings.broker_id),
                                                 replica_epoch=i64(self._broker_epoch())),
            max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=settings.replica_fetch_wait_max_ms)),
            min_bytes=i32(1), max_bytes=i32(settings.replica_fetch_max_bytes * 8), isolation_level=i8(0),
            session_id=i32(0), session_epoch=i32(-1),
            topics=tuple(fetch_v17.FetchTopic(topic_id=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
            forgotten_topics_data=(), rack_id="")

    def _apply(self, source: int, sent: dict[tuple[str, int], tuple[int, int, int]], response: Any) -> bool:
        """Apply one answer; False when every partition failed (back off before the next round)."""
        any_ok = False
        for topic in response.responses:
            name = self.host.cache.topic_name(topic.topic_id)
            for data in topic.partitions:
                key = (name or "", int(data.partition_index))
                replica = self.host.replicas.get(key)
                if key not in sent or replica is None or not self._follows(key, source):
                    continue
                any_ok = self._apply_partition(replica, data, FetchPosition(*sent[key])) or any_ok
        return any_ok

    def _apply_partition(self, replica: Replica, data: Any, sent: FetchPosition | None = None) -> bool:
        """Carry out the pure decision (broker/replica_fetch.py) on one partition's answer."""
        log = replica.log
        if sent is None:  # the answer to the position we hold now
            sent = FetchPosition(*self._position(replica))
        diverging = getattr(data, "diverging_epoch", None)  # absent from answers before v12
        decision = decide(sent, replica.leader_epoch, log.end_offset(), ErrorCode(int(data.error_code)),
                          int(data.log_start_offset),
                          None if diverging is None else (int(diverging.epoch), int(diverging.end_offset)))
        action = decision.action
        if action is FetchAction.SKIP:
            return False  # the partition moved on while the request was out
        if action is FetchAction.RESTART:
            self.host.restart_at_leader_start(replica, decision.offset)
            self.truncations += 1
            return True
        if action is FetchAction.BACK_OFF:
            _log.debug("fetching %s-%d: %s", replica.topic, replica.partition, decision.error.name)
            return False
        if action is FetchAction.TRUNCATE:
            self.host.truncate_diverging(replica, decision.offset, decision.epoch)
            self.truncations += 1
            return True
        try:
            self.host.append_as_follower(replica, data.records, int(data.high_watermark), int(data.log_start_offset))
        except InvalidAppendError as exc:
            _log.warning("fetched batches of %s-%d do not continue our log: %s", replica.topic, replica.partition, exc)
            return False
        self.lags[(replica.topic, replica.partition)] = max(0, int(data.high_watermark) - replica.log.end_offset())
        return True
