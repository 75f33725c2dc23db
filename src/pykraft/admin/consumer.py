"""A consumer for the tools: partitions read by `Fetcher`, either assigned by hand (`assign`) or by a classic
group (`subscribe`: `GroupMember`), with Kafka's consumer settings.

In a group: the member joins before its first fetch, starts each partition at the group's committed offset (or
by auto.offset.reset), heartbeats every heartbeat.interval.ms in the background, and joins again when the group
rebalances (committing what it consumed first, when auto-commit is on, as Kafka's consumer does before giving up
its partitions). A leader also rejoins when a subscribed topic's partition count changed since it assigned
(a topic created after the subscription). With enable.auto.commit the positions of the records handed out are
committed every auto.commit.interval.ms and on close; `close()` then leaves the group.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .brokers import BrokerClient
from .connect import SettingsError
from .fetcher import ConsumedRecord, Fetcher, FetchSettings
from .group_member import GroupMember, MembershipSettings, RejoinNeeded
from .partition_calls import EARLIEST, LATEST

__all__ = ["Consumer", "ConsumerSettings", "consumer_settings"]

TopicPartition = tuple[str, int]
LEADER_CHECK_S = 3.0
_INTS = {"session.timeout.ms": "session_timeout_ms", "max.poll.interval.ms": "rebalance_timeout_ms",
         "heartbeat.interval.ms": "heartbeat_interval_ms", "auto.commit.interval.ms": "auto_commit_interval_ms",
         "fetch.max.wait.ms": "max_wait_ms", "fetch.min.bytes": "min_bytes", "fetch.max.bytes": "max_bytes",
         "max.partition.fetch.bytes": "partition_max_bytes", "max.poll.records": "max_poll_records"}
HANDLED = {"bootstrap.servers", "client.id", "group.id", "group.instance.id", "key.deserializer",
           "value.deserializer", "security.protocol", "ssl.ca.location", "ssl.certificate.location",
           "ssl.key.location", "request.timeout.ms", "default.api.timeout.ms", "retry.backoff.ms",
           "retry.backoff.max.ms", "auto.offset.reset", "enable.auto.commit", "isolation.level",
           "partition.assignment.strategy", "allow.auto.create.topics", "group.protocol", *_INTS}
RANGE_NAMES = {"range", "org.apache.kafka.clients.consumer.RangeAssignor"}


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    group_id: str | None = None
    instance_id: str | None = None
    auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    rebalance_timeout_ms: int = 300000
    heartbeat_interval_ms: int = 3000
    max_poll_records: int = 500
    fetch: FetchSettings = field(default_factory=FetchSettings)


def consumer_settings(props: Mapping[str, str]) -> tuple[ConsumerSettings, list[str]]:
    """Kafka's consumer keys into settings, and the keys given that this consumer does not implement.
    SettingsError: a value Kafka's consumer refuses (its ConfigException wording)."""
    numbers: dict[str, int] = {}
    for key, name in _INTS.items():
        if key in props:
            try:
                numbers[name] = int(props[key].strip())
            except ValueError:
                raise SettingsError(f"Invalid value {props[key]} for configuration {key}: Not a number of type "
                                    f"INT") from None
    reset = props.get("auto.offset.reset", "latest").strip().lower()
    if reset not in ("earliest", "latest", "none"):
        raise SettingsError(f"Invalid value {reset} for configuration auto.offset.reset: String must be one of: "
                            f"latest, earliest, none")
    isolation = props.get("isolation.level", "read_uncommitted").strip().lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise SettingsError(f"Invalid value {isolation} for configuration isolation.level: String must be one of: "
                            f"read_committed, read_uncommitted")
    strategies = [s.strip() for s in props.get("partition.assignment.strategy", "range").split(",") if s.strip()]
    if not any(s in RANGE_NAMES for s in strategies):
        raise SettingsError(f"partition.assignment.strategy {', '.join(strategies)}: this consumer implements only "
                            f"Kafka's RangeAssignor")
    if props.get("group.protocol", "classic").strip().lower() != "classic":
        raise SettingsError("group.protocol=consumer (KIP-848) is not implemented: use group.protocol=classic")
    fetch_keys = {"max_wait_ms", "min_bytes", "max_bytes", "partition_max_bytes"}
    fetch = FetchSettings(**{k: v for k, v in numbers.items() if k in fetch_keys},
                          isolation_level=1 if isolation == "read_committed" else 0, auto_offset_reset=reset)
    settings = ConsumerSettings(
        group_id=props.get("group.id") or None, instance_id=props.get("group.instance.id") or None,
        auto_commit=props.get("enable.auto.commit", "true").strip().lower() == "true", fetch=fetch,
        **{k: v for k, v in numbers.items() if k not in fetch_keys})
    return settings, sorted(k for k in props if k not in HANDLED)


class Consumer:
    def __init__(self, client: BrokerClient, settings: ConsumerSettings) -> None:
        self.client, self.settings = client, settings
        self.fetcher = Fetcher(client, settings.fetch)
        self.member: GroupMember | None = None
        self.consumed: dict[TopicPartition, int] = {}  # next offset after the records handed out
        self._buffer: list[ConsumedRecord] = []
        self._rejoin = asyncio.Event()
        self._heartbeats: asyncio.Task[None] | None = None
        self._last_commit = time.monotonic()

    def assign(self, positions: Mapping[TopicPartition, int]) -> None:
        """Read these partitions from these offsets (or EARLIEST / LATEST), outside any group."""
        self.fetcher.assign(dict(positions))

    def subscribe(self, topics: Sequence[str]) -> None:
        s = self.settings
        if s.group_id is None:
            raise SettingsError("a subscription needs a group.id")
        self.member = GroupMember(self.client, MembershipSettings(
            s.group_id, s.session_timeout_ms, s.rebalance_timeout_ms, s.heartbeat_interval_ms, s.instance_id),
            topics)
        self._rejoin.set()

    async def _join(self) -> None:
        assert self.member is not None
        if self.member.generation >= 0 and self.settings.auto_commit:
            await self._commit_quietly()
        self._rejoin.clear()
        self._buffer.clear()
        assignment = await self.member.join()
        committed = await self.member.committed()
        reset = {"earliest": EARLIEST, "latest": LATEST}.get(self.settings.fetch.auto_offset_reset, LATEST)
        self.fetcher.assign({tp: committed.get(tp, reset) for tp in assignment})
        self.consumed = {tp: committed[tp] for tp in assignment if tp in committed}
        if self._heartbeats is None:
            self._heartbeats = asyncio.get_running_loop().create_task(self._heartbeat_loop())

    async def _heartbeat_loop(self) -> None:
        assert self.member is not None
        last_check = time.monotonic()
        while True:
            await asyncio.sleep(self.settings.heartbeat_interval_ms / 1000)
            if self._rejoin.is_set():
                continue
            try:
                await self.member.heartbeat()
                if self.member.is_leader and time.monotonic() - last_check >= LEADER_CHECK_S:
                    last_check = time.monotonic()
                    await self._check_partition_counts()
            except RejoinNeeded:
                self._rejoin.set()
            except Exception:  # a lost coordinator: the next beat or the next poll finds it again
                continue

    async def _check_partition_counts(self) -> None:
        assert self.member is not None
        metadata = await self.client.metadata(self.member.topics)
        counts = {name: len(t.partitions) for name, t in metadata.topics.items()}
        if counts != self.member.assigned_counts:
            self._rejoin.set()

    async def poll(self, timeout_ms: int) -> list[ConsumedRecord]:
        """The next records (at most max.poll.records), waiting up to `timeout_ms` for some."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            if self.member is not None and self._rejoin.is_set():
                await self._join()
            if not self._buffer:
                self._buffer = await self.fetcher.fetch()
            if self._buffer:
                taken, self._buffer = (self._buffer[:self.settings.max_poll_records],
                                       self._buffer[self.settings.max_poll_records:])
                for record in taken:
                    self.consumed[(record.topic, record.partition)] = record.offset + 1
                if not self._buffer:
                    self._caught_up()
                await self._maybe_auto_commit()
                return taken
            self._caught_up()
            await self._maybe_auto_commit()
            if time.monotonic() >= deadline:
                return []

    def _caught_up(self) -> None:
        """Everything fetched was handed out: every partition's consumed position is its fetch position (Kafka
        commits the position of every assigned partition, read from or not)."""
        for tp, position in self.fetcher.positions.items():
            if position >= 0:
                self.consumed[tp] = position

    def give_back(self, records: Sequence[ConsumedRecord]) -> None:
        """Records taken by a poll but not used: their partitions' consumed positions go back to the first one (so
        a commit does not skip them: Kafka's console consumer seeks back before closing)."""
        first: dict[TopicPartition, int] = {}
        for record in records:
            first.setdefault((record.topic, record.partition), record.offset)
        self.consumed.update(first)

    async def _maybe_auto_commit(self) -> None:
        if (self.member is not None and self.settings.auto_commit
                and (time.monotonic() - self._last_commit) * 1000 >= self.settings.auto_commit_interval_ms):
            await self._commit_quietly()

    async def _commit_quietly(self) -> None:
        self._last_commit = time.monotonic()
        if self.member is None:
            return
        try:
            await self.member.commit(self.consumed)
        except RejoinNeeded:
            self._rejoin.set()
        except Exception:  # Kafka's auto-commit logs a failed commit and goes on
            pass

    async def commit(self) -> None:
        if self.member is not None:
            await self.member.commit(self.consumed)

    async def close(self) -> None:
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeats
        if self.member is not None and self.member.generation >= 0:
            if self.settings.auto_commit:
                await self._commit_quietly()
            await self.member.leave()
