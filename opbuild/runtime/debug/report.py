"""The profile as one static HTML page (`opbuild prof --html FILE`): the per-op summary as a
table and a bar plot, and each op's worst launch (the most uneven) as one bar per block, its
slowest block marked. No network, no libraries: the data is embedded as JSON and drawn as SVG by
a few lines of script when the page is opened (tests/debug/test_profile_report.py opens it in a
headless browser)."""

from __future__ import annotations

import html
import json
from dataclasses import asdict

from opbuild.runtime.debug.profile import CAT_BLOCK, CAT_LAUNCH, summary

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>opbuild prof: {title}</title>
<style>
body {{ font: 14px sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
td, th {{ padding: 2px 8px; text-align: right; }} td:first-child, th:first-child {{ text-align: left; }}
rect.block {{ fill: #6a9fd8; }} rect.slowest {{ fill: #d8573c; }} rect.total {{ fill: #7bb274; }}
</style></head>
<body><h1>opbuild prof: {title}</h1>
<table id="summary"><thead><tr><th>op</th><th>calls</th><th>misses</th><th>total µs</th><th>mean µs</th>
<th>p50 µs</th><th>p99 µs</th><th>blocks</th><th>imbalance</th><th>slowest block</th></tr></thead><tbody></tbody></table>
<h2>Total time per op</h2><svg id="totals" width="720"></svg>
<h2>Blocks of each op's most uneven launch</h2><div id="launches"></div>
<script id="data" type="application/json">{data}</script>
<script>
const data = JSON.parse(document.getElementById("data").textContent);
const NS = "http://www.w3.org/2000/svg";
function el(name, attrs, parent) {{
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  parent.appendChild(e); return e;
}}
const tbody = document.querySelector("#summary tbody");
for (const r of data.rows) {{
  const tr = document.createElement("tr"); tr.dataset.op = r.op;
  for (const v of [r.op, r.calls, r.misses, r.total_us.toFixed(1), r.mean_us.toFixed(1), r.p50_us.toFixed(1),
                   r.p99_us.toFixed(1), r.blocks, r.imbalance.toFixed(2), r.slowest_block ?? "-"]) {{
    const td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
  }}
  tbody.appendChild(tr);
}}
const totals = document.getElementById("totals");
const most = Math.max(1e-9, ...data.rows.map(r => r.total_us));
totals.setAttribute("height", 24 * data.rows.length + 4);
data.rows.forEach((r, i) => {{
  el("rect", {{class: "total", x: 160, y: 24 * i + 2, height: 18, width: 540 * r.total_us / most, "data-op": r.op}}, totals);
  el("text", {{x: 0, y: 24 * i + 16}}, totals).textContent = r.op;
}});
for (const l of data.launches) {{
  const h = document.createElement("h3"); h.textContent = `${{l.op}}: ${{l.blocks.length}} blocks, slowest ${{l.slowest}}`;
  document.getElementById("launches").appendChild(h);
  const svg = el("svg", {{width: 720, height: 140, "data-op": l.op}}, document.getElementById("launches"));
  const longest = Math.max(1e-9, ...l.blocks.map(b => b.dur));
  const w = 700 / Math.max(1, l.blocks.length);
  l.blocks.forEach((b, i) => {{
    const hgt = 120 * b.dur / longest;
    el("rect", {{class: b.block === l.slowest ? "block slowest" : "block", x: i * w, y: 125 - hgt,
                 width: Math.max(1, w - 2), height: hgt, "data-block": b.block}}, svg)
      .appendChild(document.createElementNS(NS, "title")).textContent = `block ${{b.block}}: ${{b.dur.toFixed(1)}} µs`;
  }});
}}
document.body.dataset.rendered = "yes";
</script></body></html>
"""


def worst_launches(trace: dict) -> list[dict]:
    """Per op, its most uneven launch's blocks (block index and µs), in block order."""
    events = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    out = []
    for row in summary(trace):
        launches = [e for e in events if e.get("cat") == CAT_LAUNCH and e["name"] == row.op]
        worst = max(launches, key=lambda e: e["args"].get("imbalance", 1.0))
        start, end = worst["ts"], worst["ts"] + worst["dur"]
        blocks = sorted((e for e in events if e.get("cat") == CAT_BLOCK and e["args"].get("op") == row.op
                         and e["pid"] == worst["pid"] and start <= e["ts"] <= end), key=lambda e: e["args"]["block"])
        if blocks:
            slowest = max(blocks, key=lambda e: e["dur"])["args"]["block"]
            out.append({"op": row.op, "slowest": slowest,
                        "blocks": [{"block": e["args"]["block"], "dur": e["dur"]} for e in blocks]})
    return out


def html_report(trace: dict, title: str) -> str:
    """The page (see the module docstring)."""
    data = {"rows": [asdict(r) for r in summary(trace)], "launches": worst_launches(trace)}
    text = json.dumps(data).replace("</", "<\\/")  # never closes the script element
    return _PAGE.format(title=html.escape(title), data=text)
