"""What a report is made of: sections of items, each a figure and/or a table, or the reason it is absent."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
from matplotlib.figure import Figure


@dataclass
class Item:
    """One figure (or table) with the definition of its metric and the tables behind it."""

    id: str
    title: str
    definition: str
    figure: Figure | None = None
    shown: pl.DataFrame | None = None  # a table printed in the page itself
    data: dict[str, pl.DataFrame] = field(default_factory=dict)  # file stem → table written beside the page
    absent: str | None = None  # why there is nothing to show
    checks: list[str] = field(default_factory=list)  # what the data checks found, said beside the figure


@dataclass
class Section:
    """A numbered section: a title, a one-paragraph introduction and its items."""

    id: str
    title: str
    intro: str
    items: list[Item] = field(default_factory=list)
