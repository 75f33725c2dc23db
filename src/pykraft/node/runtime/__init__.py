"""One process driving the raft core: inputs, the effect runner's I/O, durability, the network, snapshots, traces and
metrics."""
