"""A broker's log lines in Kafka's words: its lifecycle (Kafka's BrokerLifecycleManager) and the ISR changes of the
partitions it leads (Kafka's Partition: the old and the new ISR, and why). The broker host hands over what its pure
parts reported (StateChanged, IsrChange); the wording lives here."""

from __future__ import annotations

import logging

from pykraft.broker.actions import BrokerState, IsrChange, StateChanged
from pykraft.protocol.errors import ErrorCode

_log = logging.getLogger("pykraft.node.broker")

# Why the lifecycle moved (Kafka's BrokerLifecycleManager says the same things).
_STATE_REASONS = {
    (BrokerState.STARTING, BrokerState.RECOVERY): "The broker has caught up with the metadata log. ",
    (BrokerState.RECOVERY, BrokerState.RUNNING): "The broker has been unfenced. ",
    (BrokerState.RUNNING, BrokerState.FENCED): "The controller has fenced this broker (it missed its session or "
                                               "registered again). ",
    (BrokerState.FENCED, BrokerState.RUNNING): "The broker has been unfenced again. ",
    (BrokerState.RUNNING, BrokerState.PENDING_CONTROLLED_SHUTDOWN): "Beginning controlled shutdown: the controller "
                                                                    "{leaderships}. ",
    (BrokerState.PENDING_CONTROLLED_SHUTDOWN, BrokerState.SHUTTING_DOWN): "The controller allowed the controlled "
                                                                          "shutdown. ",
}


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def log_state_change(node_id: int, change: StateChanged, led: int, broker_epoch: int) -> None:
    """`led`: the partitions this broker leads (what a controlled shutdown hands over)."""
    reason = _STATE_REASONS.get((change.old, change.new), "").format(
        leaderships=f"moves the leadership of {led} partition(s) away" if led else "finds no leadership to move")
    _log.info("[BrokerLifecycleManager id=%d] %sTransitioning from %s to %s (broker epoch %d).", node_id, reason,
              change.old.name, change.new.name, broker_epoch)


def log_isr_change(node_id: int, topic: str | None, change: IsrChange, lag_max_ms: int) -> None:
    prefix = f"[Partition {topic or change.topic_id}-{change.partition} broker={node_id}] "
    old, new = _ids(change.old_isr), _ids(change.new_isr)
    if change.outcome == "proposed" and change.kind == "shrink":
        gone = _ids(tuple(b for b in change.old_isr if b not in change.new_isr))
        _log.info("%sShrinking ISR from %s to %s: out of sync: %s (replica.lag.time.max.ms=%d)", prefix, old, new,
                  gone, lag_max_ms)
    elif change.outcome == "proposed" and change.kind == "recover":
        _log.info("%sReporting the partition recovered (its leader was elected uncleanly); ISR %s", prefix, new)
    elif change.outcome == "proposed":
        joined = _ids(tuple(b for b in change.new_isr if b not in change.old_isr))
        _log.info("%sExpanding ISR from %s to %s: caught up: %s", prefix, old, new, joined)
    elif change.outcome == "accepted":
        _log.info("%sISR updated to %s and partition epoch updated to %d", prefix, new, change.partition_epoch)
    else:
        _log.info("%sThe controller refused the ISR change from %s to %s with %s; waiting for the committed state",
                  prefix, old, new, change.error.name if change.error is not None else "an error")


def _ids(brokers: tuple[int, ...]) -> str:
    return ",".join(str(b) for b in brokers)
