"""Open-loop outputs: the per-step series as Parquet, the figures as JSON, and the study's Figure 14/15-style plot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl


if TYPE_CHECKING:
    from matplotlib.figure import Figure


def series_figure(steps: pl.DataFrame, title: str, forecast_label: str) -> Figure:
    """Busy, forecast, powered and total nodes over the replayed period (one line each, days on the x axis)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.4), layout="constrained")
    ax = fig.add_subplot()
    days = (steps["time"] - steps["time"][0]).to_numpy() / 86_400
    ax.plot(days, steps["total"].to_numpy(), color="0.4", lw=1.2, label="total nodes")
    ax.plot(days, steps["active"].to_numpy(), color="tab:green", lw=1.4, label="powered nodes")
    ax.plot(days, steps["used"].to_numpy(), color="tab:blue", lw=1.0, label="busy nodes")
    ax.plot(days, steps["forecast"].to_numpy(), color="tab:orange", lw=0.9, ls="--", label=forecast_label)
    short = steps.filter(pl.col("lack") > 0)
    if short.height:
        ax.scatter((short["time"] - steps["time"][0]).to_numpy() / 86_400, short["used"].to_numpy(), color="tab:red",
                   s=14, zorder=3, label=f"shortage ({short.height})")
    start = steps["time"][0]
    ax.set_xlabel(f"days from {pl.select(pl.from_epoch(pl.lit(start), time_unit='s')).item():%Y-%m-%d %H:%M} UTC")
    ax.set_ylabel("nodes")
    ax.set_ylim(bottom=0)
    ax.set_xlim(0, max(float(days[-1]), 1e-9))
    ax.grid(axis="y", ls=":")
    ax.legend(loc="lower left", ncols=5, fontsize=8, frameon=False)
    ax.set_title(title, fontsize=10)
    return fig


# what an open-loop run writes (an earlier run's are replaced as a whole: see dlcluster.atomic.atomic_folder)
OPEN_LOOP_FILES = ("steps.parquet", "horizons.parquet", "ces.svg", "ces.png", "summary.json")


def write_open_loop(outdir: Path, steps: pl.DataFrame, summary: dict[str, Any], horizons: pl.DataFrame | None,
                    title: str, forecast_label: str) -> list[Path]:
    """Write ``steps.parquet``, ``horizons.parquet`` (if any), ``summary.json`` and ``ces.svg``/``ces.png`` into the
    staging folder ``outdir`` (see :func:`dlcluster.atomic.atomic_folder`)."""
    from dlcluster.predict.evaluate import save_figure

    outdir.mkdir(parents=True, exist_ok=True)
    written = [outdir / "steps.parquet"]
    steps.write_parquet(written[0], compression="zstd")
    if horizons is not None:  # (a compat run has none)
        written.append(outdir / "horizons.parquet")
        horizons.write_parquet(written[-1])
    written += save_figure(series_figure(steps, title, forecast_label), outdir / "ces")
    written.append(outdir / "summary.json")
    written[-1].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return written
