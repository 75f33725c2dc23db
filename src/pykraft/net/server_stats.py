"""The counters a `FrameServer` keeps, and the snapshot of them it hands out (`FrameServer.stats`)."""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.net.file_send import FileSendCounters

__all__ = ["ServerCounters", "ServerStats"]


@dataclass(frozen=True, slots=True)
class ServerStats:
    """Counters since the server was created (a snapshot; `FrameServer.stats` builds a new one)."""

    connections_accepted: int
    connections_open: int
    requests: int
    responses: int
    invalid_frames: int  # negative or oversize size prefix: connection closed
    handler_errors: int  # handler raised something other than CloseConnection: connection closed
    closed_by_handler: int  # handler raised CloseConnection
    authentications: int = 0  # SASL authentications (and re-authentications) that succeeded
    failed_authentications: int = 0  # SASL authentications refused, and connections closed before or during one
    expired_sessions_killed: int = 0  # connections closed for a request after their SASL session expired
    sent_from_file: int = 0  # consumer Fetch record bytes sent from mapped file pages (zero-copy)
    copied_from_file: int = 0  # the same read into Python first (TLS, or a full socket)


class ServerCounters:
    __slots__ = ("accepted", "authentications", "closed_by_handler", "expired", "failed_authentications",
                 "files", "handler_errors", "invalid_frames", "requests", "responses")

    def __init__(self) -> None:
        self.accepted = self.requests = self.responses = 0
        self.invalid_frames = self.handler_errors = self.closed_by_handler = 0
        self.authentications = self.failed_authentications = self.expired = 0
        self.files = FileSendCounters()

    def snapshot(self, connections_open: int) -> ServerStats:
        return ServerStats(
            connections_accepted=self.accepted,
            connections_open=connections_open,
            requests=self.requests,
            responses=self.responses,
            invalid_frames=self.invalid_frames,
            handler_errors=self.handler_errors,
            closed_by_handler=self.closed_by_handler,
            authentications=self.authentications,
            failed_authentications=self.failed_authentications,
            expired_sessions_killed=self.expired,
            sent_from_file=self.files.sent_from_file,
            copied_from_file=self.files.copied_from_file,
        )
