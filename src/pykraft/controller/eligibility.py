"""What the partition side needs to know about brokers (KIP-841): who may be in an ISR or lead.

`ClusterControl` (cluster.py) implements it from the replayed registrations; `StaticEligibility` is a fixed view for
tests and for building records "as if" a broker were already fenced or shutting down.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


class BrokerEligibility(Protocol):
    def is_registered(self, broker_id: int) -> bool: ...

    def broker_epoch(self, broker_id: int) -> int | None:
        """The registered broker epoch, None when the broker is not registered."""

    def is_fenced(self, broker_id: int) -> bool:
        """True when fenced or not registered."""

    def in_controlled_shutdown(self, broker_id: int) -> bool: ...

    def is_active(self, broker_id: int) -> bool:
        """Registered, unfenced and not in controlled shutdown: the only brokers that may lead or join an ISR."""

    def active_broker_ids(self) -> list[int]:
        """Sorted."""

    def rack_of(self, broker_id: int) -> str | None: ...


@dataclass(frozen=True, slots=True)
class BrokerFacts:
    epoch: int
    fenced: bool = False
    in_controlled_shutdown: bool = False
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class StaticEligibility:
    """A fixed map of broker facts. `excluding(id)` returns a view where that broker is no longer active."""

    brokers: Mapping[int, BrokerFacts] = field(default_factory=dict)

    def is_registered(self, broker_id: int) -> bool:
        return broker_id in self.brokers

    def broker_epoch(self, broker_id: int) -> int | None:
        facts = self.brokers.get(broker_id)
        return None if facts is None else facts.epoch

    def is_fenced(self, broker_id: int) -> bool:
        facts = self.brokers.get(broker_id)
        return facts is None or facts.fenced

    def in_controlled_shutdown(self, broker_id: int) -> bool:
        facts = self.brokers.get(broker_id)
        return facts is not None and facts.in_controlled_shutdown

    def is_active(self, broker_id: int) -> bool:
        facts = self.brokers.get(broker_id)
        return facts is not None and not facts.fenced and not facts.in_controlled_shutdown

    def active_broker_ids(self) -> list[int]:
        return sorted(b for b in self.brokers if self.is_active(b))

    def rack_of(self, broker_id: int) -> str | None:
        facts = self.brokers.get(broker_id)
        return None if facts is None else facts.rack


@dataclass(frozen=True, slots=True)
class ExcludingEligibility:
    """`base` with one broker treated as ineligible to lead or join an ISR (it is being fenced or shut down)."""

    base: BrokerEligibility
    excluded: int

    def is_registered(self, broker_id: int) -> bool:
        return self.base.is_registered(broker_id)

    def broker_epoch(self, broker_id: int) -> int | None:
        return self.base.broker_epoch(broker_id)

    def is_fenced(self, broker_id: int) -> bool:
        return self.base.is_fenced(broker_id)

    def in_controlled_shutdown(self, broker_id: int) -> bool:
        return self.base.in_controlled_shutdown(broker_id)

    def is_active(self, broker_id: int) -> bool:
        return broker_id != self.excluded and self.base.is_active(broker_id)

    def active_broker_ids(self) -> list[int]:
        return [b for b in self.base.active_broker_ids() if b != self.excluded]

    def rack_of(self, broker_id: int) -> str | None:
        return self.base.rack_of(broker_id)
