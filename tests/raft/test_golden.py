"""Golden scenario files for the raft core, etcd-raft style (its datadriven testdata): each file in golden/ is a
script of inputs (lines starting with "> ") and, under each, the `Ready` every input produced (`Ready.describe()`,
raft/describe.py), including the Readys the harness's immediate log flushes fed back. The test replays the inputs
and compares the whole text: a change of the core's behaviour shows as a text diff in review.

Regenerate after an intended change: `PYKRAFT_GOLDEN_UPDATE=1 .venv/bin/python -m pytest tests/raft/test_golden.py`
(then read the diff).

Inputs:
  init id=N voters=a,b,c [seed=S]        a fresh core over an empty log
  advance MS                              the clock moves; poll
  grant-votes | refuse-votes              answer every Vote request sent so far
  ack-begin-epoch                         answer every BeginQuorumEpoch sent so far
  append v1 v2 ...                        a leader append of these values
  fetch from=N offset=O last-epoch=E      a follower's Fetch
  vote from=N epoch=E last-epoch=LE last-offset=LO [pre-vote]   a candidate's Vote request
"""

from __future__ import annotations

import os
import pathlib

import pytest
from kio.schema.begin_quorum_epoch.v1.request import BeginQuorumEpochRequest
from kio.schema.errors import ErrorCode
from kio.schema.vote.v2.request import VoteRequest

from pykraft.raft import messages
from pykraft.raft.config import QuorumConfig

from raft_context import Context, build
from scenario_helpers import fetch, vote, vote_response

GOLDEN = pathlib.Path(__file__).parent / "golden"


class Script:
    def __init__(self) -> None:
        self.ctx: Context | None = None
        self.out: list[str] = []

    def _capture(self, call) -> None:
        ctx = self.ctx
        assert ctx is not None
        seen = []
        original = ctx._run

        def recording(ready):
            seen.append(ready)
            return original(ready)

        ctx._run = recording  # type: ignore[method-assign]
        try:
            call(ctx)
        finally:
            ctx._run = original  # type: ignore[method-assign]
        for index, ready in enumerate(seen):
            if index:
                self.out.append("then:")
            self.out.append(ready.describe())

    def run(self, line: str) -> None:
        words = line.split()
        command, args = words[0], dict(w.split("=", 1) for w in words[1:] if "=" in w)
        flags = {w for w in words[1:] if "=" not in w}
        if command == "init":
            voters = [int(v) for v in args["voters"].split(",")]
            config = QuorumConfig(append_linger_ms=0)
            self.ctx = build(int(args["id"]), voters, seed=int(args.get("seed", 1)), config=config)
            self.out.append(f"role {self.ctx.role}, epoch {self.ctx.epoch}")
            return
        ctx = self.ctx
        assert ctx is not None, "init first"
        if command == "advance":
            ms = int(words[1])
            self._capture(lambda c: c.advance(ms))
        elif command in ("grant-votes", "refuse-votes"):
            for send in ctx.take_sent(VoteRequest):
                self.out.append(f"< vote from {send.destination.node_id}: {command == 'grant-votes'}")
                self._capture(lambda c, s=send: c.respond(s, vote_response(c.epoch, command == "grant-votes")))
        elif command == "ack-begin-epoch":
            for send in ctx.take_sent(BeginQuorumEpochRequest):
                self.out.append(f"< begin-quorum-epoch ack from {send.destination.node_id}")
                answer = messages.begin_quorum_epoch_response(ErrorCode.none, ErrorCode.none, 0, ctx.epoch)
                self._capture(lambda c, s=send, a=answer: c.respond(s, a))
        elif command == "append":
            values = [w.encode() for w in words[1:]]
            self._capture(lambda c: c._run(c.core.append(values, c.now)[1]))
        elif command == "fetch":
            request = fetch(int(args["from"]), ctx.epoch, int(args["offset"]), int(args["last-epoch"]))
            self._capture(lambda c: c._run(c.core.handle_request(f"fetch-{args['from']}", request, c.now)))
        elif command == "vote":
            request = vote(int(args["from"]), int(args["epoch"]), int(args["last-epoch"]), int(args["last-offset"]),
                           pre_vote="pre-vote" in flags, voter=ctx.core.local.node_id)
            self._capture(lambda c: c._run(c.core.handle_request(f"vote-{args['from']}", request, c.now)))
        else:
            raise ValueError(f"unknown input {command!r}")
        self.out.append(f"role {ctx.role}, epoch {ctx.epoch}, hwm {ctx.core.high_watermark}")


def replay(text: str) -> str:
    """The file's inputs and comments, with each input's output regenerated."""
    script = Script()
    for line in text.splitlines():
        if line.startswith("#") or (not line.strip() and not script.out):
            script.out.append(line)
        elif line.startswith("> "):
            if script.out and script.out[-1] != "" and not script.out[-1].startswith("#"):
                script.out.append("")
            script.out.append(line)
            script.run(line[2:])
    return "\n".join(script.out).rstrip("\n") + "\n"


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.txt")), ids=lambda p: p.stem)
def test_golden_scenario(path: pathlib.Path) -> None:
    expected = path.read_text()
    actual = replay(expected)
    if os.environ.get("PYKRAFT_GOLDEN_UPDATE"):
        path.write_text(actual)
        return
    assert actual == expected, f"{path.name} changed; if intended, regenerate with PYKRAFT_GOLDEN_UPDATE=1"


def test_there_are_golden_scenarios() -> None:
    assert len(list(GOLDEN.glob("*.txt"))) >= 4


def test_a_behaviour_change_shows_as_a_text_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    """A core that times out sooner (a changed election timer) no longer reproduces the election script."""
    import functools
    import sys

    text = (GOLDEN / "election.txt").read_text()
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "QuorumConfig", functools.partial(QuorumConfig, election_timeout_ms=500))
    changed = replay(text)
    assert changed != text
    assert any(line.startswith("next poll") for line in set(changed.splitlines()) - set(text.splitlines()))
