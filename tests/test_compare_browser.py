"""The sweep comparison report in headless Chromium (Debian package) driven by Playwright."""

from __future__ import annotations

from pathlib import Path

from browser import needs_chromium, offline_page, visible_figures

from dlcluster.sweep.compare import build_compare_report

pytestmark = needs_chromium


def test_compare_report_loads_offline_with_every_figure_visible(tmp_path: Path) -> None:
    from test_compare import make_sweep

    page_path = build_compare_report(make_sweep(tmp_path / "sweep"), tmp_path / "report")
    assert "<script" not in page_path.read_text()
    with offline_page(page_path) as page:
        # the JCT CDF, the queueing delay's complementary CDF and the load curves: the fixture sweeps no other numeric
        # parameter
        assert sorted(visible_figures(page, 300, 200)) == ["ccdf-queue_delay", "cdf-jct", "curve-load"]
        assert page.locator("nav a").count() == 5
        assert page.locator("#failed table tbody tr").count() == 1
        assert page.locator("#table-mean-jct table tbody tr").count() == 6
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000
