"""dlcluster: job traces of multi-tenant GPU clusters, from reading to simulation."""

import signal

# read before Polars is imported: it installs its own Ctrl-C handler over an inherited "ignore" (`trap '' INT`, a
# script's `cmd &`), which the command line puts back (dlcluster.cli.run)
SIGINT_IGNORED = signal.getsignal(signal.SIGINT) is signal.SIG_IGN

from dlcluster.cluster import ClusterSpec  # noqa: E402
from dlcluster.errors import DlclusterError, InputError  # noqa: E402
from dlcluster.trace import Trace  # noqa: E402

__all__ = ["ClusterSpec", "DlclusterError", "InputError", "Trace", "read_trace"]
__version__ = "0.1.0"


def read_trace(path, format: str | None = None, **options) -> Trace:  # noqa: A002
    """Read any supported trace into a canonical :class:`Trace` (format auto-detected)."""
    from dlcluster.io import read_trace as _read

    return _read(path, format=format, **options)
