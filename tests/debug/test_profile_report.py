"""`opbuild prof --html`'s page, opened in a real headless browser (Chromium; skipped when none is
installed, .ci/run installs chromium-headless-shell): the script renders the summary table, one
total bar per op and one bar per block of each op's most uneven launch, its slowest marked."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from opbuild.runtime.debug.report import html_report

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"no headless browser ({', '.join(BROWSERS)})")


def _launch(op, ts, durations, pid=1):
    mean = sum(durations) / len(durations)
    events = [{"name": op, "cat": "launch", "ph": "X", "ts": ts, "dur": sum(durations) + 5, "pid": pid, "tid": 1,
               "args": {"blocks": len(durations), "imbalance": max(durations) / mean, "block_max_us": max(durations),
                        "phase1": "hit"}}]
    t = ts + 1
    for i, d in enumerate(durations):
        events.append({"name": f"{op} block {i}", "cat": "block", "ph": "X", "ts": t, "dur": d, "pid": pid, "tid": 2,
                       "args": {"op": op, "block": i}})
        t += d
    return events


def test_the_page_renders_in_a_headless_browser(tmp_path):
    browser = _browser()
    trace = {"traceEvents": [*_launch("SlowOp", 0, [2, 2, 2, 2]), *_launch("SlowOp", 100, [2, 2, 2, 40, 2, 2]),
                             *_launch("Even</script>Op", 300, [3, 3])]}
    page = tmp_path / "report.html"
    page.write_text(html_report(trace, "python app.py <&>"), encoding="utf-8")
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    dom = r.stdout
    assert 'data-rendered="yes"' in dom, r.stdout[-2000:] + r.stderr[-2000:]  # the script ran to its end
    assert "<title>opbuild prof: python app.py &lt;&amp;&gt;</title>" in dom
    assert re.findall(r'<tr data-op="([^"]+)"', dom) == ["SlowOp", "Even&lt;/script&gt;Op"]
    assert len(re.findall(r'<rect class="total"', dom)) == 2
    slow = dom[dom.index('<svg width="720" height="140" data-op="SlowOp"'):]
    slow = slow[:slow.index("</svg>")]
    assert re.findall(r'class="block( slowest)?"[^>]*data-block="(\d)"', slow) == [
        ("", "0"), ("", "1"), ("", "2"), (" slowest", "3"), ("", "4"), ("", "5")]  # the uneven launch's blocks
    assert "SlowOp: 6 blocks, slowest 3" in dom
