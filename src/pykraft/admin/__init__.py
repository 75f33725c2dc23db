"""The Python admin client under the CLI: finds the leader, retries, reports voter changes honestly."""
