"""The broker process: an observer of the metadata log that registers, heartbeats and manages ISR changes."""
