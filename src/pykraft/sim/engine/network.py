"""The simulated network: per-link drop, delay, duplication and reordering; symmetric and asymmetric partitions;
healing.

Endpoints are integers: node ids for raft nodes, 999 for the admin tool and 1000 and above for clients. A message
is checked against the partition table twice, when it is sent and when it would be delivered, so a partition
that starts while a message is in flight cuts it too. Every endpoint has an incarnation number; a message to or
from an earlier incarnation (a node that restarted meanwhile) is dropped at delivery, as the TCP connection
it travelled on would have been closed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class LinkProfile:
    """Fault probabilities and delay range (ms) of one direction of a link."""

    drop: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0  # a reordered message takes an extra delay so later messages overtake it
    delay_min_ms: int = 1
    delay_max_ms: int = 5

    def draw_delay(self, rng: random.Random) -> int:
        return rng.randint(self.delay_min_ms, self.delay_max_ms)


PERFECT = LinkProfile()
FIRST_CLIENT_ENDPOINT = 999  # wire.ADMIN; clients follow (ids below are raft nodes)


@dataclass(frozen=True, slots=True)
class Envelope:
    """A message in flight. `payload` is what the destination's handler receives."""

    src: int
    dst: int
    src_incarnation: int
    dst_incarnation: int
    payload: Any
    label: str


@dataclass
class NetworkStats:
    sent: int = 0
    delivered: int = 0
    dropped: int = 0
    duplicated: int = 0
    blocked: int = 0
    stale: int = 0


@dataclass
class Network:
    rng: random.Random
    schedule: Callable[[int, Callable[..., Any], Envelope], None]  # (delay, deliver callback, envelope)
    default: LinkProfile = PERFECT
    links: dict[tuple[int, int], LinkProfile] = field(default_factory=dict)
    cut: set[tuple[int, int]] = field(default_factory=set)  # directed (src, dst) pairs that drop everything
    incarnations: dict[int, int] = field(default_factory=dict)
    stats: NetworkStats = field(default_factory=NetworkStats)

    # ---- partitions ------------------------------------------------------------------------------------------
    def block(self, src: int, dst: int) -> None:
        """Asymmetric: messages from src to dst are lost, the other direction still works."""
        self.cut.add((src, dst))

    def isolate(self, node: int, others: Iterable[int]) -> None:
        for other in others:
            if other != node:
                self.cut.add((node, other))
                self.cut.add((other, node))

    def split(self, groups: Iterable[Iterable[int]]) -> None:
        """Symmetric partition: endpoints in different groups cannot talk. Endpoints in no group are unaffected."""
        groups = [sorted(g) for g in groups]
        for i, left in enumerate(groups):
            for right in groups[i + 1:]:
                for a in left:
                    for b in right:
                        self.cut.add((a, b))
                        self.cut.add((b, a))

    def heal(self) -> None:
        self.cut.clear()

    def set_profile(self, profile: LinkProfile) -> None:
        self.default = profile
        self.links.clear()

    # ---- incarnations --------------------------------------------------------------------------------------
    def incarnation(self, endpoint: int) -> int:
        return self.incarnations.get(endpoint, 0)

    def bump(self, endpoint: int) -> None:
        """The endpoint restarted (or died): everything in flight to or from its old self is dropped."""
        self.incarnations[endpoint] = self.incarnation(endpoint) + 1

    # ---- sending -------------------------------------------------------------------------------------------
    def send(self, src: int, dst: int, payload: Any, label: str, deliver: Callable[[Envelope], Any],
             dst_incarnation: int | None = None) -> None:
        """`dst_incarnation` pins a response to the incarnation that sent the request (default: the current one)."""
        self.stats.sent += 1
        if (src, dst) in self.cut:
            self.stats.blocked += 1
            return
        profile = self.links.get((src, dst), self.default)
        rng = self.rng
        if profile.drop and rng.random() < profile.drop:
            self.stats.dropped += 1
            return
        incarnation = self.incarnation(dst) if dst_incarnation is None else dst_incarnation
        envelope = Envelope(src, dst, self.incarnation(src), incarnation, payload, label)
        # Duplication is a raft-link fault only: a duplicated client request is a non-idempotent retry, which the
        # client-facing log (no producer ids) does not promise to absorb.
        raft_link = src < FIRST_CLIENT_ENDPOINT and dst < FIRST_CLIENT_ENDPOINT
        copies = 2 if raft_link and profile.duplicate and rng.random() < profile.duplicate else 1
        self.stats.duplicated += copies - 1
        for _ in range(copies):
            delay = profile.draw_delay(rng)
            if profile.reorder and rng.random() < profile.reorder:
                delay += rng.randint(1, 4 * profile.delay_max_ms + 5)
            self.schedule(delay, deliver, envelope)

    def admit(self, envelope: Envelope) -> bool:
        """At delivery: False when a partition or a restart on either side has cut the message."""
        if (envelope.src, envelope.dst) in self.cut:
            self.stats.blocked += 1
            return False
        if envelope.src_incarnation != self.incarnation(envelope.src) or \
                envelope.dst_incarnation != self.incarnation(envelope.dst):
            self.stats.stale += 1
            return False
        self.stats.delivered += 1
        return True
