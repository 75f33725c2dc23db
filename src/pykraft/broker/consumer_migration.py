"""The consumer coordinator's steps of the online migration (broker/group_migration.py has the rules and the
records): the upgrade of a classic group with members, its undoing when the heartbeat that asked for it fails, and
the downgrade when the last consumer-protocol member goes. A mixin of ConsumerCoordinator, kept apart for size."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pykraft.broker.consumer_group import ConsumerGroup
from pykraft.broker.group_migration import (
    check_upgrade, classic_group_of, classic_group_record, consumer_members_of, downgrade_tombstones, upgrade_records,
)
from pykraft.broker.group_state import Group

if TYPE_CHECKING:
    from pykraft.broker.consumer_coordinator import ConsumerGroupConfig, TopicImage


class MigrationSteps:
    # Provided by ConsumerCoordinator.
    config: ConsumerGroupConfig
    groups: dict[str, ConsumerGroup]
    session_deadlines: dict[tuple[str, str], int]
    rebalance_deadlines: dict[tuple[str, str], tuple[int, int]]
    join_deadlines: dict[tuple[str, str], int]
    sync_deadlines: dict[tuple[str, str], int]
    downgraded: list[tuple[Group, bool]]
    _pending: list[Any]

    def _emit(self, key: Any, value: Any) -> None:
        raise NotImplementedError

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        raise NotImplementedError

    def upgrade(self, classic: Group, image: TopicImage, now_ms: int) -> None:
        """Convert a classic group with members into a consumer group (its records emitted, to be written after
        the classic group's tombstone); MigrationRefused leaves everything as it was. The caller goes on with the
        heartbeat that asked for it, and calls `abandon` if that fails."""
        check_upgrade(classic, self.config.migration_policy, self.config.max_size)
        members = consumer_members_of(classic, image.topics)
        for key, value in upgrade_records(classic.group_id, classic.generation, members):
            self._emit(key, value)
        group = self.groups[classic.group_id]
        group.offsets.update(classic.offsets)
        for member in members:
            self.session_deadlines[(classic.group_id, member.member_id)] = \
                now_ms + member.classic.session_timeout_ms  # type: ignore[union-attr]

    def abandon(self, group_id: str) -> None:
        """Undo an upgrade whose heartbeat failed: nothing of it is written, the classic group stays."""
        self.groups.pop(group_id, None)
        for timers in (self.session_deadlines, self.rebalance_deadlines, self.join_deadlines, self.sync_deadlines):
            for key in [k for k in timers if k[0] == group_id]:
                del timers[key]
        self._pending.clear()

    def _downgrade(self, group: ConsumerGroup, leaving: set[str], now_ms: int, rebalance: bool = True) -> None:
        """The last consumer-protocol member goes: the group becomes a classic one (records: the consumer
        group's tombstones, then its GroupMetadata); the host hands the classic group to its coordinator, which
        starts a rebalance unless told not to (a static member replaced with the same subscription)."""
        classic = classic_group_of(group, leaving, group.subscription_metadata, now_ms)
        for member_id in list(group.members):
            self._cancel_timers(group.group_id, member_id)
        for key, value in downgrade_tombstones(group):
            self._emit(key, value)
        self._pending.append(classic_group_record(classic))
        self.groups.pop(group.group_id, None)
        self.downgraded.append((classic, rebalance))

    def take_downgrades(self) -> list[tuple[Group, bool]]:
        """The classic groups to adopt, each with whether to rebalance it."""
        taken, self.downgraded = self.downgraded, []
        return taken
