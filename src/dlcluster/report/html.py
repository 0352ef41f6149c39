"""Write a report: figures as SVG (inlined) and PNG files, tables as CSV, one offline HTML page."""

from __future__ import annotations

import html
import io
import math
import re
from pathlib import Path

import matplotlib
import polars as pl

from dlcluster.atomic import atomic_folder
from dlcluster.report.model import Item, Section

_NAMESPACE = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
CSS = """
body{font-family:-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;margin:0;color:#1d2330;
background:#f5f6f8;line-height:1.45}
header{background:#1f3a5f;color:#fff;padding:22px 40px}header h1{margin:0 0 4px;font-size:26px}
header p{margin:2px 0;opacity:.85}main{max-width:1320px;margin:0 auto;padding:10px 40px 60px}
nav{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:12px 24px;margin:20px 0}
nav ul{margin:6px 0;columns:2;list-style:none;padding-left:8px}nav a{color:#1f5fa4;text-decoration:none}nav a:hover{text-decoration:underline}
section{margin-top:34px}h2{border-bottom:2px solid #1f3a5f;padding-bottom:4px;color:#1f3a5f}
.intro{color:#444;max-width:900px}figure,.card{background:#fff;border:1px solid #dde1e7;border-radius:8px;
margin:18px 0;padding:14px 18px}figure h3,.card h3{margin:0 0 6px;font-size:16px}
figure svg{max-width:100%;height:auto;display:block}figcaption,.def{font-size:13px;color:#3a4250;max-width:1000px}
.def b{color:#1f3a5f}.files{font-size:12px;color:#6b7280}.absent{border-left:4px solid #e0a31b;
background:#fffaf0}table{border-collapse:collapse;font-size:13px;margin:8px 0;
font-variant-numeric:tabular-nums}th,td{border-bottom:1px solid #e3e6eb;padding:4px 10px;text-align:right}
th{background:#eef1f5;position:sticky;top:0}td:first-child,th:first-child{text-align:left}
.scroll{overflow-x:auto}.check{font-size:13px;border-left:4px solid #e0a31b;background:#fffaf0;padding:4px 10px;
margin:6px 0;max-width:1000px}details.collapsed{background:#fff;border:1px solid #dde1e7;border-radius:8px;
padding:8px 18px}details.collapsed summary{cursor:pointer;color:#3a4250}
"""


def _fmt(v: object) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        if 0 < abs(v) < 0.0005:  # (three decimals showed a small value, a 1-s wait in hours, as 0)
            return f"{v:.1e}"
        return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:,.3f}".rstrip("0").rstrip(".")
    if isinstance(v, int):
        return f"{v:,}"
    return html.escape(str(v))


def table_html(df: pl.DataFrame) -> str:
    """A small table as HTML (every cell escaped; numbers with thousands separators)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in row) + "</tr>" for row in df.iter_rows())
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _svg(item: Item) -> str:
    buf = io.StringIO()
    # per-figure salt: element ids stay unique when several SVGs share one page, and stable run to run
    with matplotlib.rc_context({"svg.hashsalt": item.id, "svg.fonttype": "path"}):
        item.figure.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None,
                                                         "Type": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _inline(svg: str) -> str:
    """The SVG for an HTML page: HTML parses SVG natively, so no namespace URLs are needed."""
    return _NAMESPACE.sub("", _METADATA.sub("", svg))


def _item(item: Item, out: Path) -> str:
    # (``out`` is the report's staging folder: each file is written in place)
    definition = f'<p class="def"><b>Definition.</b> {html.escape(item.definition)}</p>'
    if item.absent is not None:
        return (f'<div class="card absent" id="{item.id}"><h3>{html.escape(item.title)}</h3>'
                f'<p>Not shown: {html.escape(item.absent)}</p>{definition}</div>')
    files = []
    body = "".join(f'<p class="check">{html.escape(c)}</p>' for c in item.checks)
    if item.figure is not None:
        svg = _svg(item)
        # the layout the SVG's drawing solved, kept for the PNG: solving it again took a seventh of a report's CPU time
        if item.figure.get_layout_engine() is not None:
            item.figure.set_layout_engine("none")
        (out / "figures").mkdir(exist_ok=True)
        (out / "figures" / f"{item.id}.svg").write_text(svg, encoding="utf-8")
        item.figure.savefig(out / "figures" / f"{item.id}.png", format="png", dpi=110, metadata={"Software": None})
        files += [f"figures/{item.id}.svg", f"figures/{item.id}.png"]
        body += f'<div class="plot" role="img" aria-label="{html.escape(item.title)}">{_inline(svg)}</div>'
    if item.shown is not None:
        body += table_html(item.shown)
    for stem, df in item.data.items():
        (out / "tables").mkdir(exist_ok=True)
        df.write_csv(out / "tables" / f"{stem}.csv")
        files.append(f"tables/{stem}.csv")
    listing = " · ".join(f"<code>{html.escape(f)}</code>" for f in files)
    tag, cls = ("figure", "report-figure") if item.figure is not None else ("div", "card")
    caption = f"<figcaption>{definition}<p class=\"files\">Files: {listing}</p></figcaption>"
    return f'<{tag} class="{cls}" id="{item.id}"><h3>{html.escape(item.title)}</h3>{body}{caption}</{tag}>'


REPORT_FILES = ("index.html", "figures/", "tables/")  # what a report is: an earlier one's are replaced as a whole


def write_report(sections: list[Section], out: Path, title: str, subtitle: list[str]) -> Path:
    """Write figures, tables and ``index.html`` under ``out``, all together in place of an earlier report's (see
    :func:`dlcluster.atomic.atomic_folder`); return the page's path."""
    with atomic_folder(out, REPORT_FILES) as staged:
        _write_page(sections, staged, title, subtitle)
    return out / "index.html"


def _write_page(sections: list[Section], out: Path, title: str, subtitle: list[str]) -> None:
    toc = "".join(f'<li><a href="#{s.id}">{html.escape(s.title)}</a></li>' for s in sections)
    parts = []
    for s in sections:
        items = "".join(_item(i, out) for i in s.items)
        if s.items and all(i.absent is not None for i in s.items):
            # nothing drawn: one line with the reason, the per-item notes folded away
            reasons = sorted({i.absent for i in s.items if i.absent}, key=[i.absent for i in s.items].index)
            items = (f'<details class="collapsed"><summary>Nothing to show: {html.escape(" ".join(reasons))}'
                     f"</summary>{items}</details>")
        parts.append(f'<section id="{s.id}"><h2>{html.escape(s.title)}</h2><p class="intro">{html.escape(s.intro)}</p>'
                     f"{items}</section>")
    sub = "".join(f"<p>{html.escape(line)}</p>" for line in subtitle)
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1>{sub}</header><main>"
        f"<nav><b>Contents</b><ul>{toc}</ul></nav>{''.join(parts)}</main></body></html>\n"
    )
    (out / "index.html").write_text(page, encoding="utf-8")
