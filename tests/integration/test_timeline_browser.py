"""The HTML timeline in a real browser (headless Chromium): it renders, and a recovery and an
error of a known trace are drawn highlighted.

The page itself has no script; the test adds a small probe that reads the computed styles
after layout and writes them into the document, which ``--dump-dom`` then prints.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.timeline_page import render_html

TRACES = Path(__file__).resolve().parents[2] / "traces"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")

PROBE = """
<script>
function seen(selector, text) {
  const found = [...document.querySelectorAll(selector)]
    .find((node) => node.textContent.includes(text));
  if (!found) return null;
  const box = found.getBoundingClientRect();
  return {background: getComputedStyle(found).backgroundColor,
          width: box.width, height: box.height};
}
const report = {
  recovery: seen(".e.t-recovery", "reactive_compact_retry"),
  error: seen(".e.t-error", "failed: prompt_too_long"),
  plain: seen(".e.k-phase", "request_sent"),
  diagram: document.querySelector("svg.loop-diagram").getBoundingClientRect().height,
  iterations: document.querySelectorAll("details.iteration").length,
};
const out = document.createElement("pre");
out.id = "probe";
out.textContent = JSON.stringify(report);
document.body.appendChild(out);
</script>
"""


@pytest.mark.skipif(BROWSER is None, reason="chromium is not installed (apt-get install chromium)")
def test_the_page_renders_with_recovery_and_error_highlighted(tmp_path: Path) -> None:
    """In Chromium the page lays out, and the recovery and error lines have their colours."""
    assert BROWSER is not None
    page = render_html(read_trace(TRACES / "reactive_compact_retry.jsonl"))
    probed = tmp_path / "page.html"
    probed.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dumped = subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            probed.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dumped)
    assert found, dumped[-2000:]
    report = json.loads(found.group(1).replace("&quot;", '"'))
    assert report["iterations"] == 3
    assert report["diagram"] > 300
    assert report["recovery"]["background"] == "rgb(255, 243, 191)"
    assert report["error"]["background"] == "rgb(255, 227, 227)"
    assert report["plain"]["background"] == "rgba(0, 0, 0, 0)"
    assert all(report[key]["height"] > 0 for key in ("recovery", "error", "plain"))
