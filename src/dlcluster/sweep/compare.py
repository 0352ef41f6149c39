"""The comparison report of a sweep's results folder: metrics per setting with 95% intervals over seeds.

A *setting* is one combination of every swept parameter except ``seed`` (and the trace); its cells
are the seeds. Intervals are Student t intervals of the mean over those cells. The page is written
by the characterisation report's HTML writer, so it shares its style, offline SVG and determinism.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullLocator
from scipy import stats as sps

from dlcluster.errors import InputError
from dlcluster.report.html import write_report
from dlcluster.report.model import Item, Section

REQUIRED = {"cell": "integer", "cell_id": "string", "status": "string", "error": "string", "trace": "string"}
STATUSES = ("ok", "failed")
SEED = "seed"
CONFIDENCE = 0.95
LABELS = {
    "mean_jct": "mean JCT (s)", "p50_jct": "p50 JCT (s)", "p95_jct": "p95 JCT (s)", "p99_jct": "p99 JCT (s)",
    "mean_queue_delay": "mean queueing delay (s)", "p50_queue_delay": "p50 queueing delay (s)",
    "p95_queue_delay": "p95 queueing delay (s)", "p99_queue_delay": "p99 queueing delay (s)",
    "utilization": "utilisation (busy GPU share)", "fairness": "fairness", "energy_kwh": "energy (kWh)",
    "energy_saved_pct": "energy saved (%)", "mean_slowdown": "mean slowdown",
    "mean_bounded_slowdown": "mean bounded slowdown", "makespan": "makespan (s)",
}
# the report's tables, in this order, when the sweep has them
TABLED = ("mean_jct", "p50_jct", "p99_jct", "mean_queue_delay", "p50_queue_delay", "p99_queue_delay",
          "utilization", "energy_kwh", "energy_saved_pct", "fairness")
CURVED = ("mean_jct", "p99_jct", "mean_queue_delay", "p99_queue_delay", "utilization", "fairness",
          "energy_kwh", "energy_saved_pct", "slowdown_gpu_hours")
HIGHER_IS_BETTER = {"utilization", "utilization_powered", "fairness", "energy_saved_pct", "estimates_spearman",
                    "estimates_within_100", "validation_gpu_hours_saved"}
LOWER_IS_BETTER = {"unschedulable", "mean_jct", "p50_jct", "p95_jct", "p99_jct", "mean_queue_delay",
                   "p50_queue_delay", "p95_queue_delay", "p99_queue_delay", "mean_slowdown",
                   "mean_bounded_slowdown", "makespan", "preemptions", "energy_kwh", "wakeups", "boot_delayed_jobs",
                   "boot_delay_seconds", "estimates_mae", "estimates_mdape", "failed_gpu_hours", "retries_made",
                   "slowdown_gpu_hours", "validation_pool_gpu_hours"}
# metrics that are never negative (times, counts, energy, shares): their intervals end at 0, where a t interval of a
# few spread-out seeds would reach below it (a negative JCT is no possible value, only a wide interval drawn badly)
NON_NEGATIVE = LOWER_IS_BETTER | {"utilization", "utilization_powered", "fairness", "estimates_within_100"}
PALETTE = ("#1f6fb4", "#e0731b", "#2a9d4b", "#c8323c", "#7d5ab5", "#8c564b", "#d162b0", "#6b6b6b", "#17becf",
           "#bcbd22")
STYLES = ("-", "--", ":", "-.")
CDF_POINTS = 201  # probability levels drawn per line: the figure stays small whatever the job count
MAX_PANELS = 12  # per figure; more settings continue in the next figure
MAX_LINES = 8  # settings drawn as lines of one panel when the policy is not swept


@dataclass(frozen=True)
class Sweep:
    """A sweep's results: one row per cell, the parameter and metric column names, and where it lives."""

    root: Path
    results: pl.DataFrame
    parameters: list[str]
    metrics: list[str]
    experiment: str  # the experiment file's name
    name: str = ""  # the experiment's ``name`` (empty in a folder written before sweep.json kept it)


def _label(metric: str) -> str:
    return LABELS.get(metric, metric.replace("_", " "))


def _num(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:,.3f}".rstrip("0").rstrip(".")


def _value(v: object) -> str:
    """A parameter's value as text: null (the cell kept simulate's default) reads ``default``."""
    if v is None:
        return "default"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


# ---- reading ---------------------------------------------------------------------------------------

def read_sweep(folder: str | Path) -> Sweep:
    """Read and check ``folder/results.parquet`` and ``folder/sweep.json``, as ``dlcluster sweep`` writes them."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError("not a folder (expected the results folder of dlcluster sweep)", path=root)
    meta_path, table_path = root / "sweep.json", root / "results.parquet"
    for path in (table_path, meta_path):
        if not path.is_file():
            raise InputError(f"not a sweep's results folder: no {path.name} (dlcluster sweep writes it)", path=root)
    meta = _read_meta(meta_path)
    try:
        df = pl.read_parquet(table_path)
    except Exception as exc:  # polars raises several types for a damaged or non-Parquet file
        raise InputError(f"not a readable Parquet file ({type(exc).__name__})", path=table_path) from exc
    if df.height == 0:
        raise InputError("no cells (the table has no rows)", path=table_path)
    for name, kind in REQUIRED.items():
        if name not in df.columns:
            raise InputError(f"missing column (need {', '.join(REQUIRED)})", path=table_path, field=name)
        dtype = df.schema[name]
        ok = dtype.is_integer() if kind == "integer" else dtype in (pl.String, pl.Null) or isinstance(
            dtype, pl.Categorical | pl.Enum)
        if not ok:
            raise InputError(f"expected a {kind} column, found {dtype}", path=table_path, field=name)
    for name in meta["parameters"] + meta["metrics"]:
        if name not in df.columns:
            raise InputError("listed in sweep.json but not a column of results.parquet", path=table_path, field=name)
    for name in meta["metrics"]:
        if not (df.schema[name].is_numeric() or df.schema[name] == pl.Null):
            raise InputError(f"metric column is {df.schema[name]}, not numeric", path=table_path, field=name)
    df = df.with_columns(pl.col("status").cast(pl.String), pl.col("trace").cast(pl.String),
                         pl.col("error").cast(pl.String), pl.col(meta["metrics"]).cast(pl.Float64))
    bad = df.with_row_index("row").filter(~pl.col("status").is_in(STATUSES) | pl.col("status").is_null())
    if bad.height:
        raise InputError(f"status {bad['status'][0]!r}: expected one of {', '.join(STATUSES)}", path=table_path,
                         row=int(bad["row"][0]) + 1, field="status", row_label="row")
    if df["cell"].n_unique() != df.height or df["cell"].null_count():
        raise InputError("cell numbers must be unique and non-null", path=table_path, field="cell")
    numbered = df.with_row_index("row")
    for name in meta["metrics"]:  # (a sweep writes null for a figure it has not; NaN or infinity broke the figures)
        odd = numbered.filter(~pl.col(name).is_finite())
        if odd.height:
            raise InputError(f"{odd[name][0]} is not a finite number (a metric is a number or null)", path=table_path,
                             row=int(odd["row"][0]) + 1, field=name, row_label="row")
    return Sweep(root, df.sort("cell"), meta["parameters"], meta["metrics"], meta["experiment"], meta["name"])


def _read_meta(path: Path) -> dict:
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not readable JSON ({exc})", path=path) from exc
    if not isinstance(meta, dict):
        raise InputError("expected a JSON object", path=path)
    for key in ("parameters", "metrics"):
        value = meta.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError("expected a list of column names", path=path, field=key)
    clash = [p for p in meta["parameters"] if p in REQUIRED or p in meta["metrics"]]
    if clash:
        raise InputError(f"'{clash[0]}' is both a parameter and another column", path=path, field="parameters")
    experiment, name = meta.get("experiment", ""), meta.get("name", "")
    return {"parameters": meta["parameters"], "metrics": meta["metrics"],
            "experiment": experiment if isinstance(experiment, str) else "",
            "name": name if isinstance(name, str) else ""}


# ---- statistics ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    """The sweep's settings: grouping columns, which of them vary, one row per setting (``setting`` index)."""

    keys: list[str]  # trace and every parameter except seed
    varying: list[str]  # those of ``keys`` taking more than one value
    table: pl.DataFrame  # setting, keys..., label, cells, ok
    cells: pl.DataFrame  # the results with their ``setting`` index


def settings_of(sweep: Sweep) -> Settings:
    """Group the cells by every parameter except the seed, in order of first appearance."""
    keys = ["trace"] + [p for p in sweep.parameters if p not in (SEED, "trace")]
    df = sweep.results
    grouped = (df.group_by(keys, maintain_order=True)
               .agg(pl.col("cell"), cells=pl.len(), ok=(pl.col("status") == "ok").sum())
               .with_row_index("setting"))
    cells = df.join(grouped.select("setting", "cell").explode("cell"), on="cell", how="left", maintain_order="left")
    varying = [k for k in keys if grouped[k].n_unique() > 1]
    labels = [", ".join(f"{k}={_value(r[k])}" for k in varying) or "all cells" for r in grouped.iter_rows(named=True)]
    table = grouped.drop("cell").with_columns(label=pl.Series(labels, dtype=pl.String))
    return Settings(keys, varying, table, cells)


def interval_stats(settings: Settings, metrics: list[str]) -> pl.DataFrame:
    """Per setting and metric over the ok cells: n, mean, sd and the 95% Student t interval (null when n < 2; cut
    at 0 for metrics that are never negative)."""
    ok = settings.cells.filter(pl.col("status") == "ok")
    frame = pl.DataFrame({"setting": pl.Series([], dtype=pl.UInt32), "metric": pl.Series([], dtype=pl.String),
                          "value": pl.Series([], dtype=pl.Float64)})
    if metrics:
        frame = ok.unpivot(on=metrics, index="setting", variable_name="metric", value_name="value")
    long = frame.drop_nulls("value")
    grid = settings.table.select("setting").join(pl.DataFrame({"metric": metrics}, schema={"metric": pl.String}),
                                                 how="cross", maintain_order="left_right")
    agg = long.group_by("setting", "metric").agg(n=pl.len(), mean=pl.col("value").mean(), sd=pl.col("value").std())
    out = grid.join(agg, on=["setting", "metric"], how="left", maintain_order="left").with_columns(
        pl.col("n").fill_null(0).cast(pl.Int64))
    n = out["n"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        tq = np.where(n > 1, sps.t.ppf(0.5 + CONFIDENCE / 2, np.maximum(n - 1, 1)), np.nan)
        half = tq * out["sd"].fill_null(np.nan).to_numpy() / np.sqrt(np.maximum(n, 1))
    half_s = pl.Series("half", half, dtype=pl.Float64).fill_nan(None)
    # a setting whose seeds all gave the very same run (a trace file, no random choice) has one result, not n
    # independent draws: a zero-width interval would claim a certainty the seeds never tested
    identical = pl.col("setting").is_in(sorted(replicated(settings, metrics))).alias("identical")
    return out.with_columns(half_s, identical).with_columns(
        pl.when(pl.col("identical")).then(None).otherwise(pl.col("half")).alias("half")).with_columns(
        ci_low=pl.col("mean") - pl.col("half"), ci_high=pl.col("mean") + pl.col("half")).drop("half").with_columns(
        pl.when(pl.col("metric").is_in(sorted(NON_NEGATIVE))).then(pl.col("ci_low").clip(lower_bound=0.0))
        .otherwise(pl.col("ci_low")).alias("ci_low"))


def replicated(settings: Settings, metrics: list[str]) -> set[int]:
    """The settings with two or more successful cells that all report the same value of every metric."""
    ok = settings.cells.filter(pl.col("status") == "ok")
    if not metrics or ok.height == 0:
        return set()
    per = ok.group_by("setting").agg(pl.len().alias("n"), *(pl.col(m).n_unique() for m in metrics))
    one = pl.all_horizontal(pl.col(m) == 1 for m in metrics)
    return set(per.filter((pl.col("n") > 1) & one)["setting"].to_list())


def _ci_text(n: int, low: float | None, high: float | None, identical: bool = False) -> str:
    if n == 0:
        return "no successful cell"
    if n == 1:
        return "n = 1, no interval"
    if identical:
        return f"{n} identical runs, no interval"
    return f"{_num(low)} – {_num(high)}"


def _shown_columns(settings: Settings) -> list[str]:
    return settings.varying or ["trace"]


def _display_keys(settings: Settings) -> pl.DataFrame:
    """The setting index and its varying parameters as text (null shown as ``default``)."""
    cols = _shown_columns(settings)
    return settings.table.select("setting", *[pl.col(c).map_elements(_value, return_dtype=pl.String,
                                                                     skip_nulls=False)
                                              if settings.table.schema[c] != pl.String
                                              else pl.col(c).fill_null("default") for c in cols])


# ---- figures --------------------------------------------------------------------------------------

def _style(i: int) -> tuple[str, str]:
    return PALETTE[i % len(PALETTE)], STYLES[(i // len(PALETTE)) % len(STYLES)]


def _figure(n: int) -> tuple[Figure, list]:
    cols = min(3, n)
    rows = -(-n // cols)
    fig = Figure(figsize=(4.4 * cols, 3.1 * rows + 0.5), layout="constrained")
    flat = list(fig.subplots(rows, cols, squeeze=False).ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _legend(fig: Figure, names: list[str]) -> None:
    handles = [Line2D([], [], color=_style(i)[0], ls=_style(i)[1], lw=2) for i in range(len(names))]
    # as many columns as the figure's width holds at the longest label (about 0.07 in a character, plus the
    # handle), widening a figure too narrow for even one
    need = 0.07 * max(map(len, names), default=1) + 0.5
    if fig.get_figwidth() < need:
        fig.set_figwidth(need)
    fit = int(fig.get_figwidth() // need)
    fig.legend(handles, names, loc="outside upper center", ncols=max(1, min(len(names), 4, fit)))


def _combo_label(row: dict, keys: list[str]) -> str:
    return ", ".join(f"{k}={_value(row[k])}" for k in keys) or "all cells"


def _read_jobs(sweep: Sweep, settings: Settings) -> tuple[pl.DataFrame, int]:
    """Completed jobs' ``jct`` and ``queue_delay`` of every ok cell, with its setting; and how many lacked jobs."""
    frames = []
    missing = 0
    for cell_id, setting in settings.cells.filter(pl.col("status") == "ok").select("cell_id", "setting").iter_rows():
        path = sweep.root / "cells" / str(cell_id) / "jobs.parquet"
        if not path.is_file():
            missing += 1
            continue
        try:
            names = pl.read_parquet_schema(path)
            for col in ("jct", "queue_delay"):
                if col not in names:
                    raise InputError("missing column of the simulator's per-job table", path=path, field=col)
            # only the columns drawn: a large sweep reads many per-job tables
            wanted: list[str] = [c for c in ("jct", "queue_delay", "status") if c in names]
            jobs = pl.read_parquet(path, columns=wanted)
        except InputError:
            raise
        except Exception as exc:  # polars raises several types for a damaged or non-Parquet file
            raise InputError(f"not a readable Parquet file ({type(exc).__name__})", path=path) from exc
        if "status" in jobs.columns:
            jobs = jobs.filter(pl.col("status").cast(pl.String) == "completed")
        frames.append(jobs.select(pl.col("jct", "queue_delay").cast(pl.Float64))
                      .with_columns(setting=pl.lit(setting, dtype=pl.UInt32)))
    empty = pl.DataFrame(schema={"jct": pl.Float64, "queue_delay": pl.Float64, "setting": pl.UInt32})
    return (pl.concat(frames) if frames else empty), missing


def _cdf_items(sweep: Sweep, settings: Settings) -> list[Item]:
    jobs, missing = _read_jobs(sweep, settings)
    jobs = jobs.join(settings.table, on="setting", how="left", maintain_order="left")
    series_key = _series_key(settings)
    panel_keys = [k for k in settings.varying if k != series_key] if series_key != "label" else []
    tied = [k for k in panel_keys if series_key and _tied(settings.table, series_key, k)]
    panel_keys = [k for k in panel_keys if k not in tied]
    note = f" {missing} successful cell(s) had no jobs.parquet and are left out." if missing else ""
    per = series_key.replace("_", " ") if series_key not in (None, "label") else "setting"
    lines = ("One line per setting, all in one panel." if series_key == "label" else
             f"One line per {per}, one panel per combination of the other swept settings (a setting that comes with "
             f"the {per}, such as a policy's estimator, names the line).")
    lines += (f" Lines are per policy; when the policy is not swept, per setting in one panel (up to {MAX_LINES} "
              "settings), else per the swept setting with the most values.")
    kinds = (
        ("cdf", "jct", f"JCT CDF per {per}",
         f"Empirical CDF of the per-job JCT (seconds, completed jobs), seeds pooled: every cell of a setting "
         f"contributes all its jobs. {lines} Log x axis; values below 1 s are drawn at 1 s."),
        # most jobs of a lightly loaded cluster never wait: a CDF would spend its height on them and squeeze the
        # tail that policies differ in into its top edge
        ("ccdf", "queue_delay", f"queueing-delay complementary CDF per {per}",
         f"Complementary CDF: the share of jobs (completed, seeds pooled) that waited longer than x seconds, "
         f"log–log: the tail the policies differ in, down to one job in the line. {lines} A line starts at the "
         f"share that waited longer than 1 s; a setting none of whose jobs waited that long has no line."),
    )
    items = []
    for kind, metric, title, definition in kinds:
        definition += note
        ident = f"{kind}-{metric}"
        part = jobs.drop_nulls(metric)
        if part.height == 0:
            items.append(Item(ident, title, definition, absent="no successful cell has completed jobs to draw."))
            continue
        panels = part.select(panel_keys).unique(maintain_order=True) if panel_keys else pl.DataFrame({"_": [0]})
        line_keys = [series_key, *tied] if series_key else []
        series = part.select(line_keys).unique(maintain_order=True).rows(named=True) if line_keys else [{}]
        names = [_line_name(settings.table, series_key, s, settings.varying) if series_key == "label" else
                 _policy_line_name(series_key, s, tied) if series_key else "all cells" for s in series]
        rows = []
        chunks = [panels.slice(i, MAX_PANELS) for i in range(0, panels.height, MAX_PANELS)]
        for c, chunk in enumerate(chunks):
            fig, axes = _figure(chunk.height)
            for ax, prow in zip(axes, chunk.iter_rows(named=True), strict=True):
                sel = _line(part, panel_keys, prow)
                grid = np.geomspace(1.0, max(2.0, float(sel[metric].to_numpy().max())), CDF_POINTS) \
                    if kind == "ccdf" else None
                for i, s in enumerate(series):
                    d = _line(sel, line_keys, s)
                    if d.height == 0:
                        continue
                    values = d[metric].to_numpy()
                    colour, ls = _style(i)
                    if kind == "cdf":
                        ps = np.linspace(0.0, 1.0, CDF_POINTS)
                        xs = np.quantile(values, ps, method="inverted_cdf")
                        ax.step(np.maximum(xs, 1.0), ps, where="post", color=colour, ls=ls, lw=1.5)
                        rows.append({"panel": _combo_label(prow, panel_keys), "series": names[i], "jobs": d.height,
                                     "p": ps, "value": xs})
                    else:
                        assert grid is not None
                        xs, ps = grid, _share_above(values, grid)
                        ax.step(xs, np.where(ps > 0, ps, np.nan), where="post", color=colour, ls=ls, lw=1.5)
                        rows.append({"panel": _combo_label(prow, panel_keys), "series": names[i], "jobs": d.height,
                                     "seconds": xs, "share_waiting_longer": ps})
                ax.set_xscale("log")
                # a decade apart, labelled, the major ticks and their grid say enough; the unlabelled minor ticks
                # of axes spanning many decades were most of the report's drawing time
                ax.xaxis.set_minor_locator(NullLocator())
                ax.set_xlabel(f"{'JCT' if metric == 'jct' else 'queueing delay'} (s)")
                if kind == "cdf":
                    ax.set_ylim(0, 1.02)
                    ax.set_ylabel("fraction of jobs")
                else:
                    ax.set_yscale("log")
                    ax.yaxis.set_minor_locator(NullLocator())
                    ax.set_ylim(0.5 / sel.height, 1.5)
                    ax.set_ylabel("share of jobs waiting longer")
                if panel_keys:
                    ax.set_title(_combo_label(prow, panel_keys), fontsize=9)
            _legend(fig, names)
            suffix = f" ({c + 1} of {len(chunks)})" if len(chunks) > 1 else ""
            data = {}
            if c == len(chunks) - 1:
                columns = ("p", "value") if kind == "cdf" else ("seconds", "share_waiting_longer")
                data = {f"{kind}_{metric}": pl.DataFrame(rows).explode(*columns)}
            items.append(Item(ident + (f"-{c + 1}" if c else ""), f"{title}{suffix}", definition, figure=fig,
                              data=data))
    return items


def _share_above(values: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Per x of ``xs``, the share of ``values`` above it."""
    return 1.0 - np.searchsorted(np.sort(values), xs, side="right") / len(values)


def _series_key(settings: Settings) -> str | None:
    """What the CDFs draw one line per (a column of the settings table; None: one line, all cells).

    The policy, unless it is not swept and something else is: then each setting (``label``) when there are at most
    ``MAX_LINES``, all in one panel, else the swept setting with the most values. One line per panel would compare
    nothing.
    """
    if "policy" in settings.varying or ("policy" in settings.keys and not settings.varying):
        return "policy"
    if not settings.varying:
        return None
    if settings.table.height <= MAX_LINES:
        return "label"
    return max(settings.varying, key=lambda k: settings.table[k].n_unique())  # (the first of equals)


def _tied(table: pl.DataFrame, series_key: str, key: str) -> bool:
    """Whether setting ``key`` comes with the line's ``series_key`` (qssf's estimator): each line takes one value
    of it, or each value it takes (other than the default) belongs to one line. It then names the line instead of
    splitting panels."""
    one_each = table.group_by(series_key).agg(pl.col(key).n_unique())[key].max() == 1
    owners = table.filter(pl.col(key).is_not_null()).group_by(key).agg(pl.col(series_key).n_unique())[series_key]
    return bool(one_each or owners.max() == 1)


def _line_name(table: pl.DataFrame, key: str, line: dict[str, Any], shown: list[str]) -> str:
    """A whole setting's line label (``key`` is ``label``), read off the settings table: the values of ``shown``
    it sets (a legend has no room for every default), else the label itself."""
    row = _line(table, [key], line).row(0, named=True)
    return ", ".join(f"{k}={_value(row[k])}" for k in shown if row[k] is not None) or str(line[key])


def _policy_line_name(key: str, line: dict[str, Any], tied: list[str]) -> str:
    """A line's label: a policy by its name, another setting as ``key=value``, followed by the settings that come
    with it (e.g. ``qssf (estimates=lgbm)``)."""
    name = _value(line[key]) if key == "policy" else f"{key}={_value(line[key])}"
    named = ", ".join(f"{k}={_value(line[k])}" for k in tied if line[k] is not None)
    return name + (f" ({named})" if named else "")


def _line(df: pl.DataFrame, keys: list[str], row: dict) -> pl.DataFrame:
    """The rows of ``df`` whose ``keys`` equal ``row``'s (null matching null)."""
    for k in keys:
        df = df.filter(pl.col(k).is_null() if row[k] is None else pl.col(k) == row[k])
    return df


def _curve_items(stats: pl.DataFrame, settings: Settings, metrics: list[str]) -> list[Item]:
    numeric = [k for k in settings.keys if k != "trace" and settings.table.schema[k].is_numeric()]
    xs = (["load"] if "load" in numeric else []) + [k for k in numeric if k != "load"]
    items = []
    for x in xs:
        title = f"Metrics versus {x.replace('_', ' ')}"
        ident = f"curve-{x.replace('_', '-')}"
        values = settings.table[x].drop_nulls().unique().sort().to_list()
        definition = (f"Mean over seeds of each metric against the swept {x}, one line per combination of the other "
                      f"swept settings; the band is the 95% Student t interval of the mean (none where a point has "
                      f"a single seed). The axis spans the means; a band wider than the axis is cut at its edges.")
        if len(values) < 2:
            items.append(Item(ident, title, definition,
                              absent=f"{x} takes one value only ({', '.join(map(_value, values)) or 'none'}), "
                                     f"so there is no curve to draw."))
            continue
        shown: list[str] = []
        constant: list[str] = []
        for m in (m for m in CURVED if m in metrics):
            means = stats.filter(pl.col("metric") == m)["mean"].drop_nulls()
            if means.len() == 0:
                continue
            (constant if means.n_unique() == 1 else shown).append(m)
        if constant:
            definition += " Equal in every setting, so not drawn: " + ", ".join(
                f"{_label(m)} = {_num(stats.filter(pl.col('metric') == m)['mean'].drop_nulls()[0])}"
                for m in constant) + "."
        if not shown:
            items.append(Item(ident, title, definition, absent="no metric differs between settings."))
            continue
        others = [k for k in settings.varying if k != x]
        joined = stats.join(settings.table, on="setting", how="left", maintain_order="left").filter(
            pl.col(x).is_not_null())
        lines = joined.select(others).unique(maintain_order=True) if others else pl.DataFrame({"_": [0]})
        # a line with no successful cell (e.g. only failed cells) gets neither colour nor legend entry
        lines = lines.filter(pl.Series([_line(joined, others, r).drop_nulls("mean").height > 0
                                        for r in lines.iter_rows(named=True)], dtype=pl.Boolean))
        names = [_combo_label(r, others) for r in lines.iter_rows(named=True)]
        fig, axes = _figure(len(shown))
        for ax, m in zip(axes, shown, strict=True):
            part = joined.filter(pl.col("metric") == m)
            for i, lrow in enumerate(lines.iter_rows(named=True)):
                d = _line(part, others, lrow).drop_nulls("mean").sort(x)
                if d.height == 0:
                    continue
                colour, ls = _style(i)
                xv = d[x].cast(pl.Float64).to_numpy()
                ax.plot(xv, d["mean"].to_numpy(), marker="o", ms=3, color=colour, ls=ls, lw=1.5)
                lo = d["ci_low"].fill_null(np.nan).to_numpy()
                hi = d["ci_high"].fill_null(np.nan).to_numpy()
                if np.isfinite(lo).any():
                    ax.fill_between(xv, lo, hi, color=colour, alpha=0.14, lw=0)
            drawn = part["mean"].drop_nulls().to_numpy().astype(float)
            least, most = float(np.min(drawn)), float(np.max(drawn))
            # few seeds give very wide intervals: the axis follows the means, and bands are cut at its edges
            span = (most - least) or abs(most) * 0.1 or 1.0
            bottom = least - 0.6 * span
            # a metric that cannot go negative (all means >= 0) keeps its axis at or above zero
            ax.set_ylim(max(bottom, 0.0) if least >= 0 else bottom, most + 0.6 * span)
            ax.set_xlabel(x.replace("_", " "))
            ax.set_title(_label(m), fontsize=9)
        _legend(fig, names)
        data = joined.filter(pl.col("metric").is_in(shown)).select(
            *others, x, "metric", "n", "mean", "ci_low", "ci_high")
        items.append(Item(ident, title, definition, figure=fig, data={f"curve_{x}": data}))
    if not xs:
        items.append(Item("curve-none", "Metrics versus a numeric parameter",
                          "Curves need a numeric swept parameter other than the seed.",
                          absent="no numeric parameter besides the seed was swept."))
    return items


# ---- tables ---------------------------------------------------------------------------------------

def _metric_items(stats: pl.DataFrame, settings: Settings, metrics: list[str]) -> list[Item]:
    keys = _display_keys(settings)
    items = []
    for m in (m for m in TABLED if m in metrics):
        part = stats.filter(pl.col("metric") == m)
        cut = ", cut at 0 (the metric is never negative)" if m in NON_NEGATIVE else ""
        definition = (f"{_label(m)}: the mean over the seeds of each setting, with n (successful cells behind the "
                      f"value) and the {CONFIDENCE:.0%} Student t confidence interval of that mean, "
                      f"mean ± t(0.975, n−1)·s/√n{cut}. A setting with one seed has no interval.")
        if part["n"].sum() == 0:
            items.append(Item(f"table-{m.replace('_', '-')}", _label(m), definition,
                              absent="no successful cell reports this metric."))
            continue
        shown = keys.join(part, on="setting", how="left", maintain_order="left").sort("setting").with_columns(
            pl.struct("n", "ci_low", "ci_high", "identical").map_elements(
                lambda r: _ci_text(r["n"], r["ci_low"], r["ci_high"], r["identical"]), return_dtype=pl.String)
            .alias("95% CI"))
        cols = _shown_columns(settings)
        means = shown["mean"].drop_nulls()
        if means.n_unique() == 1 and means.len() > 1:  # (one setting with a mean is no agreement)
            definition += (f" Every setting gives the same mean, {_num(means[0])}." if means.len() == shown.height
                           else f" Every setting with a value gives the same mean, {_num(means[0])}.")
        items.append(Item(f"table-{m.replace('_', '-')}", _label(m), definition,
                          shown=shown.select(*cols, "n", "mean", "95% CI"),
                          data={f"{m}": shown.select(*cols, "n", "mean", "sd", "ci_low", "ci_high")}))
    return items


def _no_metric_item(results: pl.DataFrame) -> Item:
    """Why section 2 has no table: no successful cell has a value of any tabled metric (say, none ran a job)."""
    ok = results.filter(pl.col("status") == "ok")
    why = ("no successful cell simulated a job (jobs = 0 in every one), so no metric has a value"
           if ok.height and "jobs" in ok.columns and (ok["jobs"].fill_null(0) == 0).all()
           else "no successful cell reports any of " + ", ".join(_label(m) for m in TABLED))
    return Item("metric-tables", "Metrics per setting", "One table per metric.", absent=why + ".")


WORKLOAD = ("trace", "load")  # what the ranking of settings holds fixed: a heavier workload is not a better policy


def best_settings(stats: pl.DataFrame, settings: Settings, metrics: list[str]) -> pl.DataFrame:
    """Per metric with a direction, and per workload (trace and load, where the sweep varies them): the best
    setting's mean (ties listed), the runner-up and whether their CIs part."""
    rows = []
    labels = dict(settings.table.select("setting", "label").iter_rows())
    fixed = [k for k in WORKLOAD if k in settings.varying]
    workloads = ([(", ".join(f"{k}={_value(v)}" for k, v in zip(fixed, key, strict=True)), part["setting"])
                  for key, part in settings.table.group_by(fixed, maintain_order=True)] if fixed
                 else [("all", settings.table["setting"])])
    for m in metrics:
        if m not in HIGHER_IS_BETTER and m not in LOWER_IS_BETTER:
            continue
        higher = m in HIGHER_IS_BETTER
        for workload, members in workloads:
            part = stats.filter((pl.col("metric") == m) & pl.col("mean").is_not_null()
                                & pl.col("setting").is_in(members.implode()))
            if part.height:
                rows.append({"metric": m, "workload": workload, **_best_of(part, labels, higher)})
    schema = {"metric": pl.String, "workload": pl.String, "better": pl.String, "best setting": pl.String,
              "n": pl.Int64, "mean": pl.Float64, "95% CI": pl.String, "runner-up": pl.String,
              "runner-up mean": pl.Float64, "clearly better": pl.String}
    return pl.DataFrame(rows, schema=schema)


def _best_of(part: pl.DataFrame, labels: dict[int, str], higher: bool) -> dict[str, Any]:
    """The best of ``part``'s settings (one metric's statistics), its runner-up and whether their CIs part."""
    part = part.sort(["mean", "setting"], descending=[higher, False])
    top = part.row(0, named=True)
    tied = part.filter(pl.col("mean") == top["mean"])
    rest = part.filter(pl.col("mean") != top["mean"])
    runner = None
    if rest.height == 0:
        best = f"all {part.height} settings tie" if part.height > 1 else labels[top["setting"]]
        verdict = "all equal" if part.height > 1 else "only one setting"
    else:
        best = "; ".join(labels[s] for s in tied["setting"].to_list())
        runner = rest.row(0, named=True)
        if top["ci_low"] is None or runner["ci_low"] is None:
            why = "identical runs" if top["identical"] or runner["identical"] else "n = 1"
            verdict = f"no interval ({why})"
        elif (top["ci_high"] < runner["ci_low"]) if not higher else (top["ci_low"] > runner["ci_high"]):
            verdict = "yes"
        else:
            verdict = "no, intervals overlap"
    return {"better": "higher" if higher else "lower", "best setting": best, "n": top["n"], "mean": top["mean"],
            "95% CI": _ci_text(top["n"], top["ci_low"], top["ci_high"], top["identical"]),
            "runner-up": labels[runner["setting"]] if runner else "–",
            "runner-up mean": runner["mean"] if runner else None, "clearly better": verdict}


def _best_item(stats: pl.DataFrame, settings: Settings, metrics: list[str]) -> Item:
    definition = ("For each metric, the setting with the best mean over seeds, among the settings of one workload "
                  "(trace and load, where the sweep varies them: a lighter load is not a better policy): lower is "
                  "better for times, delays, slowdowns, energy and counts of bad events; higher for utilisation, "
                  "fairness, saved energy and estimator accuracy. 'Clearly better' says whether its 95% interval "
                  "lies apart from the runner-up's.")
    with_data = settings.table.filter(pl.col("ok") > 0).height
    if with_data <= 1:
        which = settings.table.filter(pl.col("ok") > 0)["label"].to_list()
        reason = (f"only one setting ({which[0]}) has successful cells, so there is nothing to choose between."
                  if which else "no setting has a successful cell.")
        return Item("best", "Best setting per metric", definition, absent=reason)
    best = best_settings(stats, settings, metrics)
    if best.height == 0:
        return Item("best", "Best setting per metric", definition, absent="no metric with a known direction.")
    if (best["clearly better"] == "only one setting").all():
        return Item("best", "Best setting per metric", definition, absent="each workload (trace and load) has one "
                    "setting, so there is nothing to choose between.")
    return Item("best", "Best setting per metric", definition, shown=best, data={"best": best})


def _failed_item(settings: Settings, sweep: Sweep) -> Item:
    failed = settings.cells.filter(pl.col("status") == "failed")
    definition = "Cells whose simulation raised an error; they count in no mean, interval or curve."
    if failed.height == 0:
        return Item("failed", "Failed cells", definition, absent=f"no cell failed (all {sweep.results.height} "
                                                                  f"finished).")
    params = [p for p in sweep.parameters if p != "trace"]
    shown = failed.select("cell", "cell_id", "trace", *[pl.col(p).map_elements(_value, return_dtype=pl.String,
                                                                                skip_nulls=False) for p in params],
                          pl.col("error").fill_null("(no message)"))
    return Item("failed", f"Failed cells ({failed.height} of {sweep.results.height})", definition, shown=shown,
                data={"failed": shown})


def _overview_item(sweep: Sweep, settings: Settings) -> Item:
    df = sweep.results
    rows = []
    for p in ["trace", *[p for p in sweep.parameters if p != "trace"]]:
        values = df[p].unique(maintain_order=True).to_list()
        rows.append({"parameter": p, "values": ", ".join(_value(v) for v in values), "count": len(values)})
    ok = int((df["status"] == "ok").sum())
    sizes = [int(c) for c in settings.table["cells"].to_list()]
    size = f"{min(sizes)}–{max(sizes)}" if min(sizes) != max(sizes) else f"{min(sizes)}"
    facts = [f"{df.height} cell(s), {ok} successful, {df.height - ok} failed; {settings.table.height} setting(s) of "
             f"{size} cell(s) each."]
    if df.height == 1:
        facts.append("One cell only: every value has n = 1, no interval, and no curve can be drawn.")
    elif settings.table.height == 1:
        facts.append("One setting only (the cells differ by seed alone): intervals but nothing to compare.")
    if SEED not in sweep.parameters:
        facts.append("The seed was not swept: each setting has one cell and no interval.")
    same = replicated(settings, [m for m in sweep.metrics if m in df.columns])
    if same:
        facts.append(f"In {len(same)} of {settings.table.height} setting(s) every seed gave the very same result "
                     "(the seed changes nothing there: a trace file and no random choice), so their cells are one run "
                     "repeated and have no interval.")
    # (without the cells' wall-clock seconds: two runs of one experiment give the same report)
    return Item("overview", "Parameters swept", " ".join(facts), shown=pl.DataFrame(rows),
                data={"results": df.drop("wall_seconds", strict=False)})


# ---- the report -----------------------------------------------------------------------------------

def build_compare_report(results: str | Path, out: str | Path) -> Path:
    """Write the comparison report of a sweep's results folder to ``out/index.html``; return the page's path."""
    sweep = read_sweep(results)
    settings = settings_of(sweep)
    present = [m for m in sweep.metrics if sweep.results[m].null_count() < sweep.results.height]
    stats = interval_stats(settings, present)
    if settings.table["ok"].sum() == 0:
        note = " No cell succeeded, so every table is empty."
    else:
        note = ""
    sections = [
        Section("sweep", "1. The sweep", "What was run: the parameters, their values and the cells' outcome." + note,
                [_overview_item(sweep, settings), _failed_item(settings, sweep)]),
        Section("metrics", "2. Metrics per setting",
                "One table per metric; one row per setting (cells grouped by every parameter except the seed).",
                (_metric_items(stats, settings, present) or [_no_metric_item(sweep.results)])
                + [Item("all-metrics", "Every metric, long form", "Every metric of the sweep per setting: n, mean, "
                        "sample standard deviation and 95% interval, as a CSV file.",
                        data={"metrics": stats.join(settings.table.select("setting", "label"), on="setting",
                                                              maintain_order="left")})]),
        Section("best", "3. Best setting per metric", "Which setting wins each metric, and by how much.",
                [_best_item(stats, settings, present)]),
        Section("cdfs", "4. JCT and queueing-delay distributions",
                "Per-job distributions from each cell's jobs.parquet, seeds pooled.", _cdf_items(sweep, settings)),
        Section("curves", "5. Metrics versus parameters",
                "How each metric moves with the load and with every other numeric swept parameter.",
                _curve_items(stats, settings, present)),
    ]
    subtitle = [f"{sweep.root.name or sweep.root}: {sweep.results.height} cells"
                + (f" from {sweep.experiment}" if sweep.experiment else "")]
    title = sweep.name or sweep.experiment or sweep.root.name
    return write_report(sections, Path(out), "Sweep comparison: " + title, subtitle)

