"""The raft role of a node in its log, on every node, as Kafka's QuorumState logs it ("Completed transition to
FollowerState(...) from CandidateState(...)"): each transition the core makes (QuorumState's listeners are called on
every epoch or role change, several within one input when they chain) is one INFO line with the new and the previous
state, so a controller failover can be followed on every controller and broker, not only on the new leader.

Also the end of the raft shutdown, in words that say what happened: a stop that hands leadership over, a follower's,
or the last voter's, which has nobody to hand over to (an expected event, not a failure).
"""

from __future__ import annotations

import logging
from typing import Any

from pykraft.raft.states import Role

_log = logging.getLogger("pykraft.node.quorum")


def describe(core: Any) -> str:
    """The core's current state in Kafka's manner: the state's name and the fields an operator reads."""
    quorum, state = core.quorum, core.quorum.state
    epoch = quorum.epoch
    role = state.role
    voters = sorted(core.voters().ids())
    if role is Role.LEADER:
        return f"Leader(epoch={epoch}, voters={voters})"
    if role is Role.FOLLOWER:
        key = core.local.key
        observer = "" if key is not None and core.voters().is_voter(key) else ", observer"
        return f"Follower(epoch={epoch}, leader={state.leader_id}{observer})"
    if role is Role.CANDIDATE:
        return f"Candidate(epoch={epoch}, retries={state.retries}, voters={voters})"
    if role is Role.PROSPECTIVE:
        last = "" if state.leader_id is None else f", last leader={state.leader_id}"
        return f"Prospective(epoch={epoch}, retries={state.retries}{last}, voters={voters})"
    if role is Role.RESIGNED:
        return f"Resigned(epoch={epoch}, voters={voters})"
    voted = "" if state.voted_key is None else f", voted={state.voted_key.id}"
    leader = "" if state.leader_id is None else f", leader={state.leader_id}"
    return f"Unattached(epoch={epoch}{leader}{voted})"


class QuorumTransitionLog:
    def __init__(self, core: Any, node_id: int) -> None:
        self.prefix = f"[RaftManager id={node_id}] "
        self._last = describe(core)

    def observe(self, core: Any) -> None:
        """A QuorumState transition listener."""
        now = describe(core)
        if now != self._last:
            _log.info("%sCompleted transition to %s from %s", self.prefix, now, self._last)
            self._last = now

    def shutdown_complete(self, core: Any, graceful: bool, timeout_ms: int) -> None:
        leader = core.quorum.leader_id()
        if graceful and leader is not None and leader != core.local.node_id:
            _log.info("%sShutdown complete: node %d leads epoch %d", self.prefix, leader, core.quorum.epoch)
        elif graceful:
            _log.info("%sShutdown complete", self.prefix)
        else:
            # The deadline passed with no other leader: the other voters are stopped or cannot be reached (the last
            # controller of a cluster being stopped), which a stop of the whole quorum always meets.
            _log.info("%sShutdown complete without handing leadership over: no other voter was elected within "
                      "%d ms (are the other controllers stopped?)", self.prefix, timeout_ms)
