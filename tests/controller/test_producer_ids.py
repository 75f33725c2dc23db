"""AllocateProducerIds (KIP-730): blocks of producer ids, recorded so no id is handed out twice."""

from __future__ import annotations

from types import SimpleNamespace

from pykraft.controller.producer_ids import BLOCK_SIZE, ProducerIdControl
from pykraft.protocol.errors import ErrorCode


class _Cluster:
    def __init__(self, epochs: dict[int, int]) -> None:
        self.epochs = epochs

    def broker_epoch(self, broker_id: int) -> int | None:
        return self.epochs.get(broker_id)


def _ask(control: ProducerIdControl, broker: int, epoch: int, cluster: _Cluster):
    return control.handle_allocate(SimpleNamespace(broker_id=broker, broker_epoch=epoch), cluster)


def test_blocks_follow_each_other_and_survive_replay_on_another_replica() -> None:
    cluster = _Cluster({1: 10, 2: 20})
    active = ProducerIdControl()
    first = _ask(active, 1, 10, cluster)
    assert (first.response.error_code, first.response.producer_id_start, first.response.producer_id_len) == \
        (ErrorCode.NONE, 0, BLOCK_SIZE)
    for record in first.records:
        active.replay(record)
    second = _ask(active, 2, 20, cluster)
    assert second.response.producer_id_start == BLOCK_SIZE
    for record in second.records:
        active.replay(record)
    standby = ProducerIdControl()
    for record in active.snapshot_records():  # a snapshot keeps the last block: the next one follows it
        standby.replay(record)
    assert _ask(standby, 1, 10, cluster).response.producer_id_start == 2 * BLOCK_SIZE


def test_unknown_broker_and_stale_epoch_are_refused_without_records() -> None:
    cluster = _Cluster({1: 10})
    control = ProducerIdControl()
    unknown = _ask(control, 7, 1, cluster)
    stale = _ask(control, 1, 9, cluster)
    assert unknown.response.error_code is ErrorCode.BROKER_ID_NOT_REGISTERED and unknown.records == ()
    assert stale.response.error_code is ErrorCode.STALE_BROKER_EPOCH and stale.records == ()
