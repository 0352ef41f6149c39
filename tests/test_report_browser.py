"""Acceptance (c): the report in headless Chromium (Debian package) driven by Playwright."""

from __future__ import annotations

from pathlib import Path

from browser import needs_chromium, offline_page, visible_figures

from dlcluster.report import build_report

pytestmark = needs_chromium


def test_report_loads_offline_with_every_figure_visible(tmp_path: Path) -> None:
    from test_report import helios_like, philly_like, sim_of

    trace = helios_like(days=4)
    page_path = build_report([trace, philly_like(tmp_path / "philly")], tmp_path / "report", sim_jobs=sim_of(trace))
    with offline_page(page_path) as page:
        # (22 figures less the day-of-week one: four days do not cover every weekday)
        assert len(visible_figures(page)) == 21
        assert page.locator("nav a").count() == 7
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_simulation_report_loads_offline_with_every_figure_visible(tmp_path: Path) -> None:
    """Issue 12: the simulation runs' report in headless Chromium: no console error, no request, every figure shown."""
    from test_report_sim import FIGURES, figure_ids

    from dlcluster.cli import main

    main(["synth", "--preset", "helios-venus", "--days", "1", "--seed", "1", "-o", str(tmp_path / "t.parquet")])
    # with CES, so that the energy section draws too
    main(["simulate", str(tmp_path / "t.parquet"), "--policy", "fifo,srtf", "--power", "ces", "-o",
          str(tmp_path / "sim")])
    main(["report", str(tmp_path / "sim"), "--trace", str(tmp_path / "t.parquet"), "-o", str(tmp_path / "report")])
    page_path = tmp_path / "report" / "index.html"
    ids = figure_ids(page_path.read_text(encoding="utf-8"))
    assert ids == [*FIGURES, "sim-powered-nodes"]
    with offline_page(page_path) as page:
        assert visible_figures(page) == ids
        assert page.locator("nav a").count() == 7
