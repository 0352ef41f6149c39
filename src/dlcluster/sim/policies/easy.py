"""EASY backfilling on top of FIFO and QSSF: a reservation for the blocked head job, later jobs fill around it.

Reasoning is at VC GPU-count level: the reservation is the first expected release time at
which the VC would hold enough free GPUs for the head job, ignoring which nodes they are
on. With node fragmentation the head may still not fit at that time (it then keeps its
place at the head and gets a new reservation at the next pass).
"""

from __future__ import annotations

from dlcluster.sim.framework import Policy
from dlcluster.sim.policies.fifo import Fifo
from dlcluster.sim.policies.qssf import Qssf


class EasyBackfill(Policy):
    """Mixin: the head job's reservation from running jobs' expected ends (start + estimate, or + true duration)."""

    uses_estimates = True

    def reserve(self, head: int, now: int, free: int) -> tuple[int, int] | None:
        """(reserved start of ``head``, GPUs free then beyond its need); a job past its estimate counts as ending now."""
        jobs = self.jobs
        need = jobs.gpu[head]
        if free >= need:
            return now, free - need
        gpu = jobs.gpu
        for end, j in sorted(jobs.expected_ends(self.running, now)):
            free += gpu[j]
            if free >= need:
                return int(end), free - need
        return None


class FifoEasy(EasyBackfill, Fifo):
    """FIFO with EASY backfilling."""

    name = "fifo-easy"
    help = ("FIFO with EASY backfilling: later jobs start if they do not delay the head job's reservation "
            "(expected durations: --estimates if given, else the true duration)")


class QssfEasy(EasyBackfill, Qssf):
    """QSSF with EASY backfilling on the same estimates."""

    name = "qssf-easy"
    help = "QSSF with EASY backfilling; reservations from the estimates (needs duration estimates)"
