"""Characterisation report: analysis tables → matplotlib figures → one self-contained HTML page."""

from dlcluster.report.build import build_report

__all__ = ["build_report"]
