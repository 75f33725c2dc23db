"""The simulated machine: scheduler, network, disks, the simulated node, runs and sweeps."""
