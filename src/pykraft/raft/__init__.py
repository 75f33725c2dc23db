"""KRaft consensus as a pure, deterministic state machine (no I/O, no clock, no global randomness).

Start with `log.py` (the ReplicatedLog contract), `quorum_state.py` (the transition table) and `client.py`
(`RaftCore`, the dispatcher the runtime drives).
"""
