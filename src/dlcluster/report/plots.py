"""Figures from long tables with a ``trace`` column: one colour per trace, one panel per group.

Every function returns ``None`` when there is nothing to draw, so callers can explain the
absence instead of handing matplotlib an empty table.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import numpy as np
import polars as pl
from matplotlib import font_manager
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from dlcluster.analysis.checks import MIN_GROUP

PALETTE = ("#1f6fb4", "#e0731b", "#2a9d4b", "#c8323c", "#7d5ab5", "#8c564b", "#d162b0", "#6b6b6b")
PANEL_W, PANEL_H = 4.2, 3.0
matplotlib.rcParams.update({
    "font.size": 9, "axes.titlesize": 10, "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": True, "grid.alpha": 0.3, "legend.fontsize": 8, "legend.frameon": False,
})
# names from a trace (a Chinese lab's VCs) may need glyphs DejaVu lacks: a CJK font the machine has, if any, fills
# them in; without one they draw as boxes (the tables beside the figures hold the names), and matplotlib's warning
# for every missing glyph, two lines each, is not for the user
_CJK = sorted({f.name for f in font_manager.fontManager.ttflist if "CJK" in f.name or "Han Sans" in f.name})
if _CJK:
    matplotlib.rcParams["font.sans-serif"] = ["DejaVu Sans", *_CJK, *matplotlib.rcParams["font.sans-serif"]]
warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)


def colour(i: int) -> str:
    """The colour of the i-th trace (or series), the same in every figure."""
    return PALETTE[i % len(PALETTE)]


def _panels(n: int, cols: int = 3, fixed: bool = False, **share: object) -> tuple[Figure, list]:
    cols = 4 if n == 4 and cols == 3 else min(cols, n)
    rows = -(-n // cols)
    # not through pyplot: nothing global keeps the figure alive once the report has written it
    # ``fixed``: margins set once instead of by the constrained-layout solver, which costs a second per
    # dozen panels; for panels whose labels are short and alike
    fig = Figure(figsize=(PANEL_W * cols, PANEL_H * rows), layout=None if fixed else "constrained")
    axes = fig.subplots(rows, cols, squeeze=False, **share)
    if fixed:
        top = 1 - 0.45 / (PANEL_H * rows)  # room for the legend above
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.55 / (PANEL_H * rows), top=top - 0.35 / (PANEL_H * rows),
                            wspace=0.28, hspace=0.55)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _groups(df: pl.DataFrame, group: str | None, order: Sequence[str] | None) -> list[str | None]:
    if group is None:
        return [None]
    present = df.get_column(group).cast(pl.String).unique().to_list()
    return [g for g in order if g in present] if order else sorted(present)


def _handles(names: Sequence[tuple[int, str]]) -> list[Line2D]:
    return [Line2D([], [], color=colour(i), lw=2.5) for i, _ in names]


def _legend(fig: Figure, names: Sequence[tuple[int, str]], patches: bool = False) -> None:
    # bars are keyed by filled patches, lines by line segments: the key looks like what it names
    handles = [Patch(facecolor=colour(i)) for i, _ in names] if patches else _handles(names)
    where = {"loc": "outside upper center"} if fig.get_layout_engine() is not None else {
        "loc": "upper center", "bbox_to_anchor": (0.5, 1.0)}
    # as many columns as fit across the figure (legend font 8: about 0.07 in a character, 0.6 in for the key and
    # the gaps), so a long row of names wraps instead of running off the figure's edges
    entry = 0.6 + 0.07 * max((len(n) for _, n in names), default=1)
    fit = max(1, int(fig.get_figwidth() * 0.95 // entry))
    fig.legend(handles, [n for _, n in names], ncols=min(len(names), 6, fit), **where)


def readable_xticks(ax: Axes, labels: Sequence[str], positions: Sequence[float] | None = None,
                    width: float = PANEL_W) -> None:
    """Category tick labels that do not overlap: rotated (anchored at their tick) and thinned when crowded."""
    positions = list(range(len(labels))) if positions is None else list(positions)
    chars = max((len(str(lbl)) for lbl in labels), default=1)
    # about 11 characters per inch of axis at font size 8-9; a label rotated by 45 degrees needs about 0.2 in
    rotated = len(labels) * (chars + 1) > width * 11
    step = max(1, int(np.ceil(len(labels) * 0.2 / (width * 0.85)))) if rotated else 1
    ax.set_xticks(positions[::step], [str(lbl) for lbl in labels][::step])
    if rotated:
        for t in ax.get_xticklabels():
            t.set_rotation(45)
            t.set_horizontalalignment("right")
            t.set_rotation_mode("anchor")


def _series(df: pl.DataFrame, column: str = "trace") -> list[tuple[int, str]]:
    """(colour index, name) of each series present; an Enum column keeps one colour per name in every figure."""
    col = df.get_column(column)
    present = col.cast(pl.String).unique(maintain_order=True).to_list()
    if isinstance(col.dtype, pl.Enum):
        cats = col.dtype.categories.to_list()
        return [(cats.index(n), n) for n in cats if n in present]
    return list(enumerate(present))


def cdf(df: pl.DataFrame, x: str, xlabel: str, group: str | None = None, order: Sequence[str] | None = None,
        logx: bool = True, series: str = "trace") -> Figure | None:
    """Step CDFs of ``x`` (with its ``p`` column), one panel per ``group``, one line per ``series``."""
    if df.height == 0:
        return None
    groups = _groups(df, group, order)
    names = _series(df, series)
    # series other than traces (e.g. VCs) differ from panel to panel: each panel gets its own legend
    per_panel = series != "trace"
    fig, axes = _panels(len(groups))
    for ax, g in zip(axes, groups, strict=True):
        part = df if g is None else df.filter(pl.col(group).cast(pl.String) == g)
        present = _series(part, series) if per_panel else names
        for i, name in present:
            d = part.filter(pl.col(series).cast(pl.String) == name)
            if d.height:
                xs = d.get_column(x).cast(pl.Float64).to_numpy()
                xs = np.maximum(xs, 1.0) if logx else xs
                ax.step(np.r_[xs[0], xs], np.r_[0.0, d["p"].to_numpy()], where="post", color=colour(i), lw=1.6)
        if logx:
            ax.set_xscale("log")
            _whole_decades(ax)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("fraction")
        if g is not None:
            ax.set_title(f"{g} GPUs" if group == "bucket" else str(g))
        if per_panel:
            ax.legend(_handles(present), [n for _, n in present], loc="lower right", fontsize=7)
    if not per_panel:
        _legend(fig, names)
    return fig


def _whole_decades(ax: Axes) -> None:
    """A log x axis over less than a decade widened to the decades around it: matplotlib then labels minor ticks
    (3×10³, 4×10³, ...), which run into each other."""
    lo, hi = ax.get_xlim()
    if 0 < lo and hi < 10 * lo:
        first = math.floor(math.log10(lo))
        ax.set_xlim(10.0 ** first, 10.0 ** max(math.ceil(math.log10(hi)), first + 1))


def bars(df: pl.DataFrame, cat: str, value: str, ylabel: str, group: str | None = None,
         order: Sequence[str] | None = None, cats: Sequence[str] | None = None, percent: bool = False,
         logy: bool = False, n: str | None = None, base: str | None = None, series: str = "trace",
         xlabel: str | None = None) -> Figure | None:
    """Grouped bars: categories ``cat`` on x, one bar per ``series``, one panel per ``group``.

    ``n`` names a count column written above each bar; a bar whose ``base`` (or ``n``) is below
    ``MIN_GROUP`` is hatched and faded, as too few jobs stand behind it.
    """
    df = df.drop_nulls(value)
    if df.height == 0:
        return None
    groups = _groups(df, group, order)
    names = _series(df, series)
    cats = list(cats) if cats else sorted(df.get_column(cat).cast(pl.String).unique().to_list(),
                                          key=lambda c: (len(c), c))
    base = base or n
    width = 0.8 / len(names)
    offset = {name: k - (len(names) - 1) / 2 for k, (_, name) in enumerate(names)}
    # many bars: one panel per row, as wide as the bars need (up to a page), so every category keeps its label
    wide = len(cats) * len(names) > 24
    fig, axes = _panels(len(groups), cols=1 if wide else 3)
    if wide:
        fig.set_size_inches(min(14.0, max(PANEL_W * 2, 0.09 * len(cats) * len(names) + 2.5)), PANEL_H * len(groups))
    panel_width = fig.get_size_inches()[0] / (1 if wide else min(3, len(groups)))
    for ax, g in zip(axes, groups, strict=True):
        part = df if g is None else df.filter(pl.col(group).cast(pl.String) == g)
        for i, name in names:
            d = part.filter(pl.col(series).cast(pl.String) == name)
            rows = {r[cat]: r for r in d.with_columns(pl.col(cat).cast(pl.String)).iter_rows(named=True)}
            ys = np.array([rows[c][value] or 0.0 if c in rows else 0.0 for c in cats], dtype=float) * (
                100 if percent else 1)
            xs = np.arange(len(cats)) + offset[name] * width
            drawn = ax.bar(xs, ys, width, color=colour(i))
            for x, y, c, patch in zip(xs, ys, cats, drawn, strict=True):
                if c not in rows:
                    continue
                if base is not None and (rows[c][base] or 0) < MIN_GROUP:
                    patch.set_hatch("///")
                    patch.set_alpha(0.45)
                if n is None:
                    continue
                ax.annotate(f"{rows[c][n]:,}", (x, y), xytext=(0, 2), textcoords="offset points", ha="center",
                            va="bottom", fontsize=6, rotation=90 if len(cats) * len(names) > 12 else 0)
        readable_xticks(ax, cats, width=panel_width)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(xlabel or cat.replace("_", " "))
        if logy:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)  # an all-zero panel would otherwise centre its axis on zero
        if g is not None:
            ax.set_title(str(g).replace("_", " "))
        if n is not None and not logy:
            ax.set_ylim(top=ax.get_ylim()[1] * 1.12)  # room for the counts above the tallest bar
    if per_panel := series != "trace":
        for ax in axes:
            ax.legend([Patch(facecolor=colour(i)) for i, _ in names], [x for _, x in names], fontsize=7)
    if not per_panel:
        _legend(fig, names, patches=True)
    return fig


def lines(df: pl.DataFrame, x: str, ys: Sequence[tuple[str, str]], xlabel: str,
          xticks: Sequence[str] | None = None, xlim: tuple[float, float] | None = None) -> Figure | None:
    """One panel per ``(column, label)`` in ``ys``, one line per trace; all-null columns are skipped; ``xlim``: the
    x range whatever the points (a single point otherwise gets an axis around it, negative values included)."""
    ys = [(c, label) for c, label in ys if df.height and df.get_column(c).null_count() < df.height]
    if not ys:
        return None
    names = _series(df)
    fig, axes = _panels(len(ys))
    for ax, (col, label) in zip(axes, ys, strict=True):
        for i, name in names:
            d = df.filter(pl.col("trace").cast(pl.String) == name).drop_nulls(col)
            xs = d.get_column(x).to_numpy()
            if xticks is not None:
                xs = np.array([list(xticks).index(v) for v in xs]) if d.height else xs
            ax.plot(xs, d.get_column(col).to_numpy(), marker="o", ms=3, color=colour(i), lw=1.6)
        if xticks is not None:
            step = max(1, len(xticks) // 12)
            shown = list(xticks)[::step]
            # about 40 characters fit side by side under one panel
            crowded = step > 1 or len(shown) * max(map(len, shown)) > 40
            ax.set_xticks(np.arange(0, len(xticks), step), shown)
            if crowded:  # anchored at the tick's end, so a rotated label sits under its own tick
                for t in ax.get_xticklabels():
                    t.set(rotation=45, horizontalalignment="right", rotation_mode="anchor")
        if xlim is not None:
            ax.set_xlim(*xlim)
        ax.set_title(label)
        ax.set_xlabel(xlabel)
        ax.set_ylim(bottom=0)
    _legend(fig, names)
    return fig


def boxes(stats: pl.DataFrame, label: str) -> Figure | None:
    """Box plots from precomputed ``p5, p25, p50, p75, p95, mean`` per ``vc``, one panel per trace."""
    if stats.height == 0:
        return None
    names = _series(stats)
    fig, axes = _panels(len(names), cols=1)
    fig.set_size_inches(max(PANEL_W * 2, 0.45 * stats.group_by("trace").len()["len"].max() + 2),
                        PANEL_H * len(names))
    for ax, (i, name) in zip(axes, names, strict=True):
        d = stats.filter(pl.col("trace").cast(pl.String) == name)
        bxp = [{"label": r["vc"], "whislo": r["p5"], "q1": r["p25"], "med": r["p50"], "q3": r["p75"],
                "whishi": r["p95"], "mean": r["mean"], "fliers": []} for r in d.iter_rows(named=True)]
        ax.bxp(bxp, showmeans=True, patch_artist=True, boxprops={"facecolor": colour(i), "alpha": 0.5},
               medianprops={"color": "black"})
        readable_xticks(ax, [b["label"] for b in bxp], range(1, len(bxp) + 1), fig.get_size_inches()[0])
        ax.set_ylabel(label)
        ax.set_title(name)
        ax.set_ylim(0, max(1.0, float(d["p95"].max() or 0)) * 1.05)
    return fig


def timeline(df: pl.DataFrame, x: str, y: str, ylabel: str, xlabel: str, panel: str = "vc",
             series: str = "trace") -> Figure | None:
    """One panel per ``panel`` value, one line per ``series``: ``y`` over ``x`` (no markers: many points).

    The panels share the x axis, so the same moment lines up in every panel.
    """
    df = df.drop_nulls(y)
    if df.height == 0:
        return None
    panels = sorted(df.get_column(panel).unique().to_list())
    names = _series(df, series)
    fig, axes = _panels(len(panels), fixed=True, sharex=True)
    for ax, key in zip(axes, panels, strict=True):
        part = df.filter(pl.col(panel) == key)
        for i, name in names:
            d = part.filter(pl.col(series).cast(pl.String) == name).sort(x)
            # a series of one point draws no line: a marker keeps it visible
            ax.plot(d.get_column(x).to_numpy(), d.get_column(y).to_numpy(), color=colour(i), lw=1.1,
                    marker="o" if d.height == 1 else None, ms=4)
        ax.set_title(str(key))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelbottom=True)  # shared x: every panel keeps its own tick labels
    _legend(fig, names)
    return fig
