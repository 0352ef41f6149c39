"""``python -m dlcluster``."""

from dlcluster.cli import main

main()
