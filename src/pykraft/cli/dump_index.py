"""`pykraft dump-log` of a segment's `.index` and `.timeindex` files, as Kafka's DumpLogSegments prints them.

- `.index` (8-byte entries: relative offset, position): `offset: O position: P` per entry, with the segment's base
  offset (from the file name) added; `<file> is empty.` when there is no entry.
- `.timeindex` (12-byte entries: timestamp, relative offset): `timestamp: T offset: O` per entry.
Both files are preallocated sparse files in Kafka, so, as Kafka's tool does, the dump stops at the first entry
after the first whose offset is the base offset again (a zero entry). --json prints one object per entry.
A file whose size is not a whole number of entries is reported (its whole entries are printed first).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TextIO

from pykraft.storage.index import OFFSET_ENTRY, TIME_ENTRY

_BASE = re.compile(r"^(\d{20})\.(index|timeindex)$")
INDEX_SUFFIXES = (".index", ".timeindex")


def dump_index_file(path: Path, as_json: bool, out: TextIO) -> list[str]:
    """Print one index file; return the problems found."""
    match = _BASE.match(path.name)
    if match is None:
        return [f"{path}: not a segment index file name (20-digit base offset, .index or .timeindex)"]
    base = int(match.group(1))
    is_time = match.group(2) == "timeindex"
    entry = TIME_ENTRY if is_time else OFFSET_ENTRY
    data = path.read_bytes()
    if not as_json:
        print(f"Dumping {path}", file=out)
    whole = len(data) - len(data) % entry.size
    entries = [entry.unpack_from(data, at) for at in range(0, whole, entry.size)]
    if not entries and not is_time and not as_json:
        print(f"{path} is empty.", file=out)
    for index, fields in enumerate(entries):
        timestamp, relative = fields if is_time else (None, fields[0])
        if relative == 0 and index > 0:
            break  # a zero entry of the preallocated file: the end, as Kafka reads it
        offset = base + relative
        if as_json:
            obj = {"file": str(path), "offset": offset}
            obj.update({"timestamp": timestamp} if is_time else {"position": fields[1]})
            print(json.dumps(obj), file=out)
        elif is_time:
            print(f"timestamp: {timestamp} offset: {offset}", file=out)
        else:
            print(f"offset: {offset} position: {fields[1]}", file=out)
    if whole != len(data):
        return [f"{path}: {len(data) - whole} trailing bytes are not a whole {entry.size}-byte index entry"]
    return []
