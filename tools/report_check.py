"""Open a `pykraft analyze` report in headless Chromium (Debian's `chromium`) with every network request refused,
and check that it renders every section, with its plots, and logs no console error.

Run: `make report-check` (after `make run`), or `python tools/report_check.py OUT/report.html`.
Exit 0 when the report passes, 1 with the problems listed, 2 when Chromium is missing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The section titles of pipeline/report.py (kept here so the check needs no Spark import).
SECTIONS = ("Cluster summary", "Leadership timeline", "Commit rate and high watermark", "Metadata records by type",
            "ISR size over time", "Broker state timeline", "Audit verdicts")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def render(browser: str, report: Path) -> tuple[str, str]:
    """(the DOM after load, Chromium's log) with the network cut off."""
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
             "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0",
             "--dump-dom", report.resolve().as_uri()],
            capture_output=True, text=True, timeout=120)
    return result.stdout, result.stderr


def problems(dom: str, log: str) -> list[str]:
    found = [f"section missing: {title}" for title in SECTIONS if f"<h2>{title}</h2>" not in dom]
    if dom.count("<svg") < 4:
        found.append(f"only {dom.count('<svg')} inline plots rendered")
    found += [f"console: {line.strip()}" for line in log.splitlines() if re.search(r"CONSOLE|Uncaught", line)]
    found += [f"network: {line.strip()}" for line in log.splitlines() if "net::ERR" in line]
    return found


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: report_check.py OUT/report.html", file=sys.stderr)
        return 2
    browser = chromium()
    if browser is None:
        print("report_check: Chromium is not installed (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    report = Path(sys.argv[1])
    dom, log = render(browser, report)
    found = problems(dom, log)
    for line in found:
        print(f"report_check: {line}", file=sys.stderr)
    if not found:
        print(f"report_check: {report} renders offline: {len(SECTIONS)} sections, {dom.count('<svg')} plots, "
              f"no console error")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
