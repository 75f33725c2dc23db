"""Broker sessions: soft state kept by the active controller only (Kafka's BrokerHeartbeatManager).

Nothing here is written to the log. A new active controller starts with no sessions and re-seeds one for every
registered broker at activation, with a fresh contact time (KAFKA-18138: before that fix, brokers that were
registered under the old controller were never tracked and so never fenced). Sessions expire after
broker.session.timeout.ms without a heartbeat; the controller fences at most one stale broker per check so that
the effect of each fencing (leadership moving away) is visible before the next (KAFKA-13173).

Times are the `now_ms` values the runtime hands in; nothing reads a clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

NO_OFFSET = -1
NO_SHUTDOWN_OFFSET = -1


@dataclass(frozen=True, slots=True)
class BrokerSession:
    broker_id: int
    last_contact_ms: int
    fenced: bool
    metadata_offset: int = NO_OFFSET
    # The end offset of the batch that put the broker into controlled shutdown, -1 when not shutting down.
    controlled_shutdown_offset: int = NO_SHUTDOWN_OFFSET

    @property
    def shutting_down(self) -> bool:
        return self.controlled_shutdown_offset >= 0


class HeartbeatManager:
    def __init__(self, session_timeout_ms: int) -> None:
        assert session_timeout_ms > 0
        self.session_timeout_ms = session_timeout_ms
        self.sessions: dict[int, BrokerSession] = {}
        self.timed_out_heartbeats = 0  # TimedOutBrokerHeartbeatCount: sessions found expired

    # ---- lifecycle ---------------------------------------------------------------------------------------------
    def reseed(self, brokers: Iterable[tuple[int, bool]], now_ms: int,
               shutting_down: Iterable[tuple[int, int]] = ()) -> None:
        """Start every broker's session clock at `now_ms` (on activation). `brokers` is (id, fenced) for every
        registration. `shutting_down` gives (id, offset) for brokers whose registration says they are in
        controlled shutdown: the offset every active broker must reach before they may stop."""
        self.sessions = {broker_id: BrokerSession(broker_id, now_ms, fenced) for broker_id, fenced in brokers}
        for broker_id, offset in shutting_down:
            session = self.sessions.get(broker_id)
            if session is not None and not session.fenced:
                self.sessions[broker_id] = replace(session, controlled_shutdown_offset=offset)

    def register(self, broker_id: int, fenced: bool, now_ms: int, new_incarnation: bool) -> None:
        """A (re-)registration: the session restarts; a new incarnation forgets the old controlled shutdown."""
        old = self.sessions.get(broker_id)
        keep_shutdown = old is not None and not new_incarnation and not fenced
        self.sessions[broker_id] = BrokerSession(
            broker_id, now_ms, fenced,
            metadata_offset=old.metadata_offset if old is not None and not new_incarnation else NO_OFFSET,
            controlled_shutdown_offset=old.controlled_shutdown_offset if keep_shutdown and old is not None
            else NO_SHUTDOWN_OFFSET)

    def ensure(self, broker_id: int, fenced: bool, now_ms: int) -> BrokerSession:
        """The broker's session, started now if this controller has none (a heartbeat from a broker it never
        tracked, e.g. one registered after activation on another controller's watch)."""
        session = self.sessions.get(broker_id)
        if session is None:
            session = self.sessions[broker_id] = BrokerSession(broker_id, now_ms, fenced)
        return session

    def remove(self, broker_id: int) -> None:
        self.sessions.pop(broker_id, None)

    def touch(self, broker_id: int, fenced: bool, metadata_offset: int, now_ms: int) -> None:
        """A heartbeat arrived (or was answered late: it still counts as contact, KAFKA-15019)."""
        old = self.sessions.get(broker_id)
        shutdown_offset = NO_SHUTDOWN_OFFSET if old is None or fenced else old.controlled_shutdown_offset
        contact = now_ms if old is None else max(old.last_contact_ms, now_ms)
        self.sessions[broker_id] = BrokerSession(broker_id, contact, fenced, metadata_offset, shutdown_offset)

    def fence(self, broker_id: int) -> None:
        """The session ended: the broker is fenced and no longer shutting down (it is simply gone)."""
        old = self.sessions.get(broker_id)
        if old is not None:
            self.sessions[broker_id] = replace(old, fenced=True, controlled_shutdown_offset=NO_SHUTDOWN_OFFSET)

    def maybe_update_controlled_shutdown_offset(self, broker_id: int, offset: int) -> None:
        """Remember where the broker entered controlled shutdown; the first offset recorded wins."""
        old = self.sessions.get(broker_id)
        if old is not None and not old.fenced and not old.shutting_down:
            self.sessions[broker_id] = replace(old, controlled_shutdown_offset=offset)

    # ---- queries -----------------------------------------------------------------------------------------------
    def session(self, broker_id: int) -> BrokerSession | None:
        return self.sessions.get(broker_id)

    def has_valid_session(self, broker_id: int, now_ms: int) -> bool:
        """Unfenced and heard from within the session timeout (a fenced broker has no session to protect)."""
        session = self.sessions.get(broker_id)
        return session is not None and not session.fenced and \
            session.last_contact_ms + self.session_timeout_ms >= now_ms

    def find_one_stale_broker(self, now_ms: int) -> int | None:
        """The unfenced broker heard from longest ago, if its session has expired (ties: lowest id)."""
        unfenced = [s for s in self.sessions.values() if not s.fenced]
        if not unfenced:
            return None
        oldest = min(unfenced, key=lambda s: (s.last_contact_ms, s.broker_id))
        if oldest.last_contact_ms + self.session_timeout_ms < now_ms:
            self.timed_out_heartbeats += 1
            return oldest.broker_id
        return None

    def next_check_ms(self) -> int | None:
        """When the oldest unfenced session expires (None when there is none): the next tick worth making."""
        unfenced = [s.last_contact_ms for s in self.sessions.values() if not s.fenced]
        return None if not unfenced else min(unfenced) + self.session_timeout_ms + 1

    def lowest_active_offset(self) -> int | None:
        """The lowest metadata offset reported by a broker that is unfenced and not shutting down; None when there
        is no such broker (then nobody has to catch up before a shutting-down broker may stop)."""
        offsets = [s.metadata_offset for s in self.sessions.values() if not s.fenced and not s.shutting_down]
        return min(offsets) if offsets else None
