"""dlcluster: job traces of multi-tenant GPU clusters, from reading to simulation."""

from dlcluster.cluster import ClusterSpec
from dlcluster.errors import DlclusterError, InputError
from dlcluster.trace import Trace

__all__ = ["ClusterSpec", "DlclusterError", "InputError", "Trace", "read_trace"]
__version__ = "0.1.0"


def read_trace(path, format: str | None = None, **options) -> Trace:  # noqa: A002
    """Read any supported trace into a canonical :class:`Trace` (format auto-detected)."""
    from dlcluster.io import read_trace as _read

    return _read(path, format=format, **options)
