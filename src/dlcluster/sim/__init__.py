"""Trace-driven, event-driven simulation of GPU cluster schedulers.

``simulate(jobs, cluster, policy=...)`` returns a :class:`SimResult` with ``jobs``,
``timeline``, ``placements`` and ``summary``; policies subclass :class:`Policy`, observers
:class:`Observer` (see ``docs/simulator.md``).
"""

from dlcluster.sim.cycle import SpeedModel
from dlcluster.sim.framework import Policy
from dlcluster.sim.jobs import Jobs
from dlcluster.sim.observers import Control, Observer
from dlcluster.sim.placement import PLACEMENTS, register_placement
from dlcluster.sim.policies import POLICIES, register_policy
from dlcluster.sim.run import SimResult, SimulationError, simulate

__all__ = ["PLACEMENTS", "POLICIES", "Control", "Jobs", "Observer", "Policy", "SimResult", "SimulationError",
           "SpeedModel", "register_placement", "register_policy", "simulate"]
