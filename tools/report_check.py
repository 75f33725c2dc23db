"""Open a `pykraft analyze` report in headless Chromium (Debian's `chromium`) with every network request refused,
and check that it renders every section, every cluster's sections, with their plots, and logs no console error;
then keep a screenshot of the whole page at 1400 px wide (`report.png` beside the report) for a person to look at.

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
SECTIONS = ("Inputs and time range", "Audit verdicts", "Data directories")
CLUSTER_SECTIONS = ("Timeline", "Partitions: leader and ISR over time", "Final image",
                    "Commit rate and high watermark", "Observers and lag", "Partition logs and client histories",
                    "Metadata records by type")
WIDTH = 1400


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


def screenshot(browser: str, report: Path, target: Path, height: int) -> None:
    """The whole page at WIDTH px wide: a window of `height` px (more than the page), its blank bottom cut off."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9", f"--window-size={WIDTH},{height}",
                        f"--screenshot={target}", report.resolve().as_uri()], capture_output=True, timeout=120)
    try:
        from PIL import Image, ImageOps  # pillow comes with matplotlib (the pipeline extra)
    except ImportError:
        return
    with Image.open(target) as image:
        box = ImageOps.invert(image.convert("RGB")).getbbox()  # the non-white part
        if box is not None:
            image.crop((0, 0, image.width, min(image.height, box[3] + 20))).save(target)


def problems(dom: str, log: str) -> list[str]:
    found = [f"section missing: {title}" for title in SECTIONS if f"<h2>{title}</h2>" not in dom]
    clusters = dom.count("<section class=\"cluster\">")
    if clusters == 0:
        found.append("no cluster section")
    found += [f"cluster section missing in {clusters - dom.count(f'<h3>{t}</h3>')} cluster(s): {t}"
              for t in CLUSTER_SECTIONS if dom.count(f"<h3>{t}</h3>") < clusters]
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
    shot = report.with_name("report.png")
    # About 1 px of page per 25 bytes of these inline-SVG reports, capped; the screenshot only needs to reach the end.
    screenshot(browser, report, shot, min(30_000, max(2_000, len(dom) // 25)))
    if not found:
        print(f"report_check: {report} renders offline: {len(SECTIONS)} sections, "
              f"{dom.count('<section class=')} cluster section(s), {dom.count('<svg')} plots, no console error; "
              f"screenshot at {WIDTH} px wide: {shot}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
