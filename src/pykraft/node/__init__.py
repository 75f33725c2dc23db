"""One process = one node: configuration, storage, the raft core driven over the network, metrics and traces."""
