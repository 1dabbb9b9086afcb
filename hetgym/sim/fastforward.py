"""Quiet epochs: the fast-forward over round ticks at which no decision can change, and the watchdog.

A round tick at which nothing arrives or completes is a decision epoch like any other: the engine
builds its view, the caller decides, the engine applies the decision and advances. When the caller's
decision at such a tick is known in advance to keep every allocation (a policy that declares
``stands_on_ticks``, or the Gym environment between two pieces of news), replaying those epochs one
by one changes nothing but the clock and the counters. The run's event queue
(:meth:`EventQueue.pass_quiet_ticks <hetgym.sim.events.EventQueue.pass_quiet_ticks>`) passes over them in
one go inside :meth:`Simulator.step <hetgym.sim.engine.Simulator.step>`: given a :class:`QuietTicks`
request, the step applies its decision, then moves the clock over every following tick that would be
such an epoch, with the epoch and event counters, the next tick and the watchdog's state left exactly
as the tick-by-tick replay leaves them, and returns the next epoch that is not passed over. Job
progress is accounted lazily (only when allocations change), so nothing else moves.

A tick is passed over only when the tick-by-tick replay would have reached it as a quiet epoch and
committed it unchanged: before the next completion and the next arrival (strictly: an event at the
same instant makes the epoch news), within ``SimConfig.max_time_s``, ``max_epochs`` and the epoch
bound, before the request's ``until_s``, and before the tick at which the watchdog would stop the run
(the stall counter moves as in the replay: reset at a tick with work, a job still to arrive or a
running job past its restart penalty, else counted). Consecutive ticks passed
over are a whole number of seconds apart, so per-interval sums over them (the environment's reward
components) are exact whatever the order of their terms; ticks on a round that is not a whole
number of seconds are replayed one by one.

A policy whose answer at ticks between events is its last decision, until a time it can compute
(ElasticFlow: its plans' next change point), declares that time (:meth:`Policy.quiet_until_s
<hetgym.sim.policy.Policy.quiet_until_s>`); :meth:`Simulator.run <hetgym.sim.engine.Simulator.run>` and the
event environment then ask it at a tick only when its answer may change. Such a request carries ``kept``:
ticks are passed over only after a step whose decision changed no job. The state after that step is a fixed
point of the decision: at the next tick the policy gives the same decision (its declaration, its own state
unchanged), the placer gets the same inputs (the same counts and current servers on the same cluster) and
so places as before, and nothing changes again; so every tick before the declared time is a quiet epoch
committed unchanged. A decision that changed a job is verified at the next tick, replayed.

The watchdog (:mod:`hetgym.sim.watchdog`: work done, penalties in force, the epoch bound) decides both when
a run stalls and how far a fast-forward may go.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from hetgym.sim.policy import Policy
from hetgym.sim.view import JobView


class QuietTicks:
    """A request to pass over quiet round ticks in one step, and what the step passed over.

    Args:
        until_s: Pass over no tick later than this time.
        views: Keep the running jobs' views at the last tick passed over (:attr:`running`).
        horizon: Gives ``until_s`` instead, called only when a tick comes before the next event.
        deadlines: Pass over no tick at which an active job has lost its deadline (a tick past
            ``deadline + DEADLINE_TOL_S``; :mod:`hetgym.sim.deadlines`): the epoch there brings news.
        kept: Pass over ticks only if the step's decision changed no job (nothing started, moved, resized,
            preempted or rejected): the request of a policy that declares its answer until ``until_s`` is
            the allocation it just gave (:meth:`Policy.quiet_until_s <hetgym.sim.policy.Policy.quiet_until_s>`).

    Attributes:
        times_s: The ticks passed over, in order (empty when none was): each was an epoch whose
            decision kept every allocation.
        running: With ``views``, the running jobs' views (submission order) at the last of them.
    """

    __slots__ = ("deadlines", "horizon", "kept", "running", "times_s", "until_s", "views")

    def __init__(
        self,
        until_s: float = math.inf,
        *,
        views: bool = False,
        horizon: Callable[[], float] | None = None,
        deadlines: bool = False,
        kept: bool = False,
    ) -> None:
        self.until_s = until_s
        self.kept = kept
        self.views = views
        self.horizon = horizon
        self.deadlines = deadlines
        self.times_s: list[float] = []
        self.running: tuple[JobView, ...] = ()


def quiet_hook(policy: object) -> Callable[[], float] | None:
    """The policy's :meth:`~hetgym.sim.policy.Policy.quiet_until_s`, or ``None`` when it declares nothing."""
    hook = getattr(policy, "quiet_until_s", None)
    if hook is None or getattr(type(policy), "quiet_until_s", None) is Policy.quiet_until_s:
        return None
    return hook


def quiet_request(until_s: float, now_s: float, *, deadlines: bool = True) -> QuietTicks | None:
    """The request for a policy whose answer stands at ticks before ``until_s`` (exclusive), after a decision at
    ``now_s``: ``None`` when no tick can be passed over. ``deadlines`` (default) keeps the epochs at which a
    deadline is lost (the deadline log as in the replay)."""
    if not until_s > now_s:
        return None
    return QuietTicks(math.nextafter(until_s, -math.inf), deadlines=deadlines, kept=True)
