"""Shared fixtures: the real trace samples in ../shared (skipped cleanly when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def _shared(rel: str) -> Path:
    path = SHARED / rel
    if not path.exists():
        pytest.skip(f"shared sample {rel} not available")
    return path


@pytest.fixture
def shared_data() -> Path:
    """``../shared/data`` (skips the test when the folder is absent)."""
    return _shared("data")


@pytest.fixture
def shared_reference() -> Path:
    """``../shared/reference`` (skips the test when the folder is absent)."""
    return _shared("reference")
