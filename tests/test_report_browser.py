"""Acceptance (c): the report in headless Chromium (Debian package) driven by Playwright."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlcluster.report import build_report

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="no Chromium at /usr/bin/chromium")


def test_report_loads_offline_with_every_figure_visible(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    from test_report import helios_like, philly_like, sim_of

    trace = helios_like(days=4)
    page_path = build_report([trace, philly_like(tmp_path / "philly")], tmp_path / "report", sim_jobs=sim_of(trace))
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
            assert figures.count() == 22
            for i in range(figures.count()):
                svg = figures.nth(i).locator("svg").first
                svg.scroll_into_view_if_needed()
                box = svg.bounding_box()
                assert svg.is_visible() and box is not None and box["width"] > 100 and box["height"] > 100, \
                    figures.nth(i).get_attribute("id")
            assert page.locator("nav a").count() == 7
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert [u for u in requests if not u.startswith("file:")] == []
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_simulation_report_loads_offline_with_every_figure_visible(tmp_path: Path) -> None:
    """Issue 12: the simulation runs' report in headless Chromium: no console error, no request, every figure shown."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from test_report_sim import FIGURES, figure_ids

    from dlcluster.cli import main

    main(["synth", "--preset", "helios-venus", "--days", "1", "--seed", "1", "-o", str(tmp_path / "t.parquet")])
    main(["simulate", str(tmp_path / "t.parquet"), "--policy", "fifo,srtf", "-o", str(tmp_path / "sim")])
    main(["report", str(tmp_path / "sim"), "--trace", str(tmp_path / "t.parquet"), "-o", str(tmp_path / "report")])
    page_path = tmp_path / "report" / "index.html"
    ids = figure_ids(page_path.read_text(encoding="utf-8"))
    assert ids == FIGURES
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
            assert figures.count() == len(FIGURES)
            for i in range(figures.count()):
                svg = figures.nth(i).locator("svg").first
                svg.scroll_into_view_if_needed()
                box = svg.bounding_box()
                assert svg.is_visible() and box is not None and box["width"] > 100 and box["height"] > 100, ids[i]
            assert page.locator("nav a").count() == 6
        finally:
            browser.close()
    assert errors == []
    assert [u for u in requests if not u.startswith("file:")] == []
