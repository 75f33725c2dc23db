"""Property: whatever AddVoter / RemoveVoter / UpdateVoter requests, probe answers, fetches and time a leader sees,
it never raises, never has more than one uncommitted voter change, and every voter set in its log differs from the
previous one by at most one voter (KIP-853's single-change rule that makes joint consensus unnecessary)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v4.request import ApiVersionsRequest

from pykraft.raft import reconfig_messages as rm
from pykraft.raft.voter_set import SupportedVersionRange
from kio.schema.errors import ErrorCode

from raft_context import CLUSTER, endpoints
from reconfig_context import dir_of, fetch, key, leader_with_committed_epoch, other_endpoints

NODES = st.integers(min_value=0, max_value=5)
ACTIONS = st.one_of(
    st.tuples(st.just("add"), NODES, st.booleans(), st.integers(min_value=0, max_value=3000)),
    st.tuples(st.just("remove"), NODES, st.booleans()),
    st.tuples(st.just("update"), NODES, st.booleans()),
    st.tuples(st.just("probe"), st.sampled_from([(0, 1), (0, 0), None]), st.booleans()),
    st.tuples(st.just("fetch"), NODES, st.booleans()),
    st.tuples(st.just("time"), st.integers(min_value=1, max_value=1500)),
)


def apply(ctx, action, n: int) -> None:
    kind = action[0]
    if kind == "add":
        _, node, ack, timeout = action
        request = rm.add_voter_request(CLUSTER, key(node), endpoints(node), timeout, ack)
        ctx._run(ctx.core.handle_request(f"add{n}", request, ctx.now))
    elif kind == "remove":
        _, node, stale = action
        request = rm.remove_voter_request(CLUSTER, key(node, dir_of(50) if stale else None))
        ctx._run(ctx.core.handle_request(f"remove{n}", request, ctx.now))
    elif kind == "update":
        _, node, moved = action
        request = rm.update_voter_request(CLUSTER, ctx.epoch, key(node), other_endpoints(node) if moved
                                          else endpoints(node), SupportedVersionRange(0, 1))
        ctx._run(ctx.core.handle_request(f"update{n}", request, ctx.now))
    elif kind == "probe":
        _, kraft, error = action
        for send in ctx.take_sent(ApiVersionsRequest):
            answer = rm.api_versions_response(ErrorCode.unknown_server_error if error else ErrorCode.none,
                                              None if kraft is None else SupportedVersionRange(*kraft))
            ctx._run(ctx.core.handle_response(send.destination.node_id, send.correlation_id, answer, ctx.now))
    elif kind == "fetch" and ctx.role == "Leader":
        _, node, lagging = action
        fetch(ctx, node, offset=max(0, ctx.log.end_offset() - 2) if lagging else None)
    elif kind == "time":
        ctx.advance(action[1])


def change_offsets(ctx, start: int) -> list[int]:
    """Offsets in [start, LEO) where a new voter set takes effect."""
    history = ctx.core.history
    return [o for o in range(start, ctx.log.end_offset()) if history.voter_set_at(o) is not history.voter_set_at(o - 1)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ACTIONS, max_size=40))
def test_voter_changes_stay_single_and_one_at_a_time(actions) -> None:
    ctx = leader_with_committed_epoch()
    first = ctx.core.history.last_voter_set_offset()  # the bootstrap VotersRecord of the fixture's log
    for n, action in enumerate(actions):
        apply(ctx, action, n)
        history = ctx.core.history
        for offset in change_offsets(ctx, first + 1):
            before, after = history.voter_set_at(offset - 1), history.voter_set_at(offset)
            assert before.has_overlapping_majority(after), (offset, before.ids(), after.ids())
        hwm = ctx.core.high_watermark
        assert hwm is not None and len(change_offsets(ctx, hwm)) <= 1  # at most one uncommitted voter change
