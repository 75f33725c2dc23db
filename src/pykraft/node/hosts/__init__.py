"""What the node runtime hosts: the controller, the broker and its data plane, groups."""
