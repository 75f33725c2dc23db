"""The `isr_view` trace events of a broker: every ISR a partition leader uses or proposes, with the metadata offset
its cache had applied then (the pipeline's KIP-841 audit of the brokers' own view checks each member against the
committed broker registrations at that offset).

- reason `committed`: the ISR the leader now counts for its high watermark changed (metadata applied, or an
  AlterPartition answer adopted ahead of the metadata);
- reason `proposed`: an AlterPartition proposal went out (the ISR it asks for).
Checked only after the ISR manager's metadata, answer and timer paths and when a proposal is sent, never on each
follower fetch (the hot path), which changes neither."""

from __future__ import annotations

from typing import Any

from pykraft.broker.isr_manager import IsrManager
from pykraft.broker.isr_rules import ProposalState
from pykraft.broker.metadata_cache import MetadataCache, TopicPartition


class IsrViewTrace:
    def __init__(self) -> None:
        self._committed: dict[TopicPartition, tuple[int, int, tuple[int, ...]]] = {}
        self._proposed: dict[TopicPartition, Any] = {}

    def observe(self, isr: IsrManager, cache: MetadataCache, trace: Any, now_ms: int) -> None:
        led = set(isr.led_partitions())
        for gone in [tp for tp in self._committed if tp not in led]:
            del self._committed[gone]
            self._proposed.pop(gone, None)
        for tp in led:
            committed = isr.committed(tp)
            if committed is None:
                continue
            view = (committed.leader_epoch, committed.partition_epoch, committed.isr)
            if self._committed.get(tp) != view:
                self._committed[tp] = view
                self._emit(trace, cache, now_ms, tp, view, "committed")
            proposal = isr.proposal(tp)
            if proposal is not None and proposal.state is ProposalState.IN_FLIGHT \
                    and self._proposed.get(tp) != (proposal.isr, proposal.base):
                self._proposed[tp] = (proposal.isr, proposal.base)
                self._emit(trace, cache, now_ms, tp, (proposal.base.leader_epoch, proposal.base.partition_epoch,
                                                      proposal.isr), "proposed")

    @staticmethod
    def _emit(trace: Any, cache: MetadataCache, now_ms: int, tp: TopicPartition,
              view: tuple[int, int, tuple[int, ...]], reason: str) -> None:
        trace.event(now_ms, "isr_view", topic=cache.topic_name(tp[0]), partition=tp[1], leader_epoch=view[0],
                    partition_epoch=view[1], isr=list(view[2]), metadata_offset=cache.last_applied_offset,
                    reason=reason)
