"""Simulated controllers and brokers hosting the same pure parts as the node."""
