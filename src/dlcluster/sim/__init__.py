"""Trace-driven, event-driven simulation of GPU cluster schedulers.

``simulate(jobs, cluster, policy=...)`` returns a :class:`SimResult` with ``jobs``,
``timeline`` and ``summary``; policies subclass :class:`Policy` (see ``docs/simulator.md``).
"""

from dlcluster.sim.framework import Jobs, Policy
from dlcluster.sim.placement import PLACEMENTS
from dlcluster.sim.policies import POLICIES, register_policy
from dlcluster.sim.run import SimResult, simulate

__all__ = ["PLACEMENTS", "POLICIES", "Jobs", "Policy", "SimResult", "register_policy", "simulate"]
