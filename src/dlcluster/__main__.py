"""``python -m dlcluster``."""

from dlcluster.cli import run

run()
