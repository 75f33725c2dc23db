"""What a controller operation produces: records to append, and the answer to give once they commit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ControllerResult:
    """`records` are metadata record objects (pykraft.records.metadata.schema), appended as one atomic batch.
    `response` is the kio response to send after they commit (None when the operation has no caller)."""

    records: tuple[Any, ...] = ()
    response: Any = None

    @property
    def is_empty(self) -> bool:
        return not self.records and self.response is None
