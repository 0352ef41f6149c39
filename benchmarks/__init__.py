"""Benchmarks: run all with ``make bench`` (or ``.venv/bin/python -m benchmarks``)."""
