"""Open a report page in headless Chromium (the Debian package) with Playwright: what every browser test shares."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(), reason="no Chromium at /usr/bin/chromium")


@contextmanager
def offline_page(page_path: Path) -> Iterator[Any]:
    """The page loaded in Chromium; on leaving (without an error), asserts that it logged no console error and
    asked for nothing but ``file:`` URLs."""
    sync_api = pytest.importorskip("playwright.sync_api")
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
            yield page
        finally:
            browser.close()
    assert errors == []
    assert [u for u in requests if not u.startswith("file:")] == []


def visible_figures(page: Any, min_width: int = 100, min_height: int = 100) -> list[str | None]:
    """The ids of the page's report figures, each asserted visible (scrolled into view) and at least this large."""
    figures = page.locator("figure.report-figure")
    ids = []
    for i in range(figures.count()):
        svg = figures.nth(i).locator("svg").first
        svg.scroll_into_view_if_needed()
        box = svg.bounding_box()
        ids.append(figures.nth(i).get_attribute("id"))
        assert svg.is_visible() and box is not None and box["width"] > min_width and box["height"] > min_height, \
            ids[-1]
    return ids
