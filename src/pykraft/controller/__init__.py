"""The controller: the metadata state machine replicated by the quorum (pure, like the raft core)."""
