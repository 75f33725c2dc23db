"""Invariant checkers and the linearizability checker."""
