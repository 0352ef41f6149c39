"""Dedicated servers (the Philly study's guideline 2): a multi-GPU job never shares a server with another job."""

from __future__ import annotations

from dlcluster.sim.cluster import Allocation, VCState
from dlcluster.sim.placement.consolidate import consolidate_on


class Dedicated:
    """Multi-GPU jobs consolidated on servers no other job uses; 1-GPU jobs packed on servers 1-GPU jobs share.

    A multi-GPU job goes only to empty servers, by the rule of ``consolidate`` restricted to them: one server
    (the smallest empty one that holds it, lowest index on ties) when it fits the largest server, never split;
    a larger job takes whole empty servers (largest first) and best-fits the remainder on another empty one
    (spread over the emptiest empty ones if none holds it). While it runs nothing else joins its servers. A
    1-GPU job goes to a server that only 1-GPU jobs use, the fullest first (best fit), and only when none has
    a free GPU to an empty server (the smallest, lowest index on ties).
    """

    name = "dedicated"
    # the answer depends only on the VC's state and the job's size; taking GPUs never makes a job fit
    sized = True
    isolates = True  # the cycle makes the VC count multi-GPU jobs per node (VCState.track_multi)
    help = ("multi-GPU jobs only on servers no other job uses (consolidated); 1-GPU jobs packed on servers "
            "shared by 1-GPU jobs first")

    def place(self, state: VCState, gpus: int, waited: int = 0, cpus: int = 0) -> Allocation | None:
        """Dedicated-server placement or None."""
        usable = state.usable(gpus, cpus)
        if usable is None:
            return None
        free, sizes = state.free, state.sizes
        if gpus == 1:
            # untracked (a trial on an empty VC, before any run): no node holds a multi-GPU job
            multi = state.multi or [0] * len(sizes)
            shared = empty = -1
            for n, u in enumerate(usable):
                if u and not multi[n]:
                    if free[n] < sizes[n]:
                        if shared < 0 or u < usable[shared]:
                            shared = n
                    elif empty < 0 or u < usable[empty]:
                        empty = n
            node = shared if shared >= 0 else empty
            return None if node < 0 else [(node, 1)]
        # only empty servers (an unusable node shows no free GPUs, so it is never "empty")
        rest = [u if free[n] == sizes[n] else 0 for n, u in enumerate(usable)]
        return consolidate_on(rest, sizes, gpus, state.largest)
