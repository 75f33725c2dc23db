"""Deterministic simulation of whole pykraft clusters: scheduler, network, disks, faults, invariants, linearizability."""
