"""The sweep comparison report in headless Chromium (Debian package) driven by Playwright."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcluster.sweep.compare import build_compare_report

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no Chromium at /usr/bin/chromium")


def test_compare_report_loads_offline_with_every_figure_visible(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    from test_compare import make_sweep

    page_path = build_compare_report(make_sweep(tmp_path / "sweep"), tmp_path / "report")
    assert "<script" not in page_path.read_text()
    errors: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            figures = page.locator("figure.report-figure")
            # the two CDFs and the load curves: the fixture sweeps no other numeric parameter
            assert sorted(figures.nth(i).get_attribute("id") for i in range(figures.count())) == [
                "cdf-jct", "cdf-queue_delay", "curve-load"]
            for i in range(figures.count()):
                svg = figures.nth(i).locator("svg").first
                svg.scroll_into_view_if_needed()
                box = svg.bounding_box()
                assert svg.is_visible() and box is not None and box["width"] > 300 and box["height"] > 200, \
                    figures.nth(i).get_attribute("id")
            assert page.locator("nav a").count() == 5
            assert page.locator("#failed table tbody tr").count() == 1
            assert page.locator("#table-mean-jct table tbody tr").count() == 6
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert [u for u in requests if not u.startswith("file:")] == []
    assert (tmp_path / "report.png").stat().st_size > 10_000
