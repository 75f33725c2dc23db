"""Remove the `noqa` codes ruff reports as unused (RUF100), keeping the reason written after them.

`ruff check --fix` removes a whole `# noqa: BLE001 - the boundary of this one request` comment, reason and all;
this keeps `# the boundary of this one request` and drops only the codes that suppress nothing (a code that is still
needed stays). For a merge that brings markers for rules `make lint` does not run.

Run: `python tools/drop_unused_noqa.py` from the repository root (it runs `.venv/bin/ruff`), then `make lint`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

PATHS = ("src", "tests", "benchmarks", "tools")
_NOQA = re.compile(r"(\s*)#\s*noqa:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)(.*)$")


def unused_codes() -> dict[str, list[tuple[int, set[str]]]]:
    """file -> (line, codes ruff calls unused there), from ruff's own RUF100 findings."""
    ruff = Path(".venv/bin/ruff")
    done = subprocess.run([str(ruff if ruff.exists() else "ruff"), "check", "--output-format", "json", *PATHS],
                          capture_output=True, text=True)
    found: dict[str, list[tuple[int, set[str]]]] = defaultdict(list)
    for finding in json.loads(done.stdout or "[]"):
        if finding["code"] == "RUF100":
            codes = set(re.findall(r"`([A-Z]+[0-9]+)`", finding["message"]))
            found[finding["filename"]].append((finding["noqa_row"], codes))
    return found


def without_codes(line: str, unused: set[str]) -> str:
    """`line` with the `unused` codes taken out of its noqa comment; no codes left: the reason as a plain comment."""
    match = _NOQA.search(line)
    if match is None:
        return line
    kept = [code.strip() for code in match.group(2).split(",") if code.strip() not in unused]
    head, rest = line[:match.start()], match.group(3)
    if kept:
        return f"{head}{match.group(1)}# noqa: {', '.join(kept)}{rest}"
    reason = re.sub(r"^\s*[-:;]?\s*", "", rest).lstrip("# ")
    return f"{head}  # {reason}" if reason else head.rstrip()


def main() -> int:
    changed = 0
    for name, sites in unused_codes().items():
        path = Path(name)
        lines = path.read_text().split("\n")
        for row, unused in sites:
            new = without_codes(lines[row - 1], unused)
            changed += new != lines[row - 1]
            lines[row - 1] = new
        path.write_text("\n".join(lines))
    print(f"{changed} noqa comments changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
