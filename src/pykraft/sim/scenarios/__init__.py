"""The scenarios, their registry, faults and workloads."""
