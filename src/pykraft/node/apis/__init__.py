"""The requests a node answers itself (metadata, produce, fetch, offsets, groups, ...)."""
