"""The ``decisions="on-change"`` rule of :class:`~hetgym.envs.env.HetClusterEnv`: the epochs the agent is not shown.

Under ``decisions="on-change"`` the agent is asked only at epochs with news (an arrival, a completion, a
rejection or a missed deadline; the env's ``Arguments``). A round tick after which nothing changed is a
quiet epoch: the allocation in force stands, so the environment commits it unchanged without building the
window's observation or mask, and asks the simulator to pass over the quiet ticks that follow a commit in
the same step (:mod:`hetgym.sim.fastforward`). :class:`QuietEpochs`, a base of the environment, holds
that rule: which epochs are quiet, what the standing allocation is, and the request for the ticks to pass
over. Committing, the interval accounting and the episode's bookkeeping stay in :mod:`hetgym.envs.env`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hetgym.envs.state import Commit, DecisionState, WindowOrder, sort_jobs
from hetgym.sim.allocation import JobAllocation
from hetgym.sim.fastforward import QuietTicks
from hetgym.sim.view import ClusterView, JobView

if TYPE_CHECKING:
    from hetgym.envs.config import HetClusterConfig
    from hetgym.sim.engine import Simulator
    from hetgym.sim.rates import RateTable


class QuietEpochs:
    """The quiet epochs of ``decisions="on-change"`` (a base of :class:`~hetgym.envs.env.HetClusterEnv`).

    The environment sets the state read here (``config``, ``state``, ``sim``, ``render_mode``,
    ``_statics``, ``_window_order``, ``_requested``, ``_changed``, ``_done``).
    """

    config: HetClusterConfig
    state: DecisionState
    sim: Simulator | None
    render_mode: str | None
    _statics: RateTable
    _window_order: WindowOrder
    _requested: bool
    _changed: bool
    _done: bool

    def _standing_commit(self, view: ClusterView) -> Commit:
        """What committing ``view``'s epoch with an untouched draft gives: every job keeps its allocation.

        The same jobs, in the same order (the window's), as :meth:`DecisionState.commit` after
        :meth:`DecisionState.load`, without filling the window's arrays (only the jobs holding GPUs are
        sorted: the window order's keys are unique, so they keep their relative order); no row, so the
        simulator checks and applies nothing. A job whose mode is not one of the configured modes would be
        given the first one by the draft when in the window: then the draft is built as usual.
        """
        jobs = self._standing_jobs(view.running, view.now_s)
        if jobs is None:
            self.state.load(view, self._statics, self._window_order)
            return self.state.commit()
        held = [(jid, ja.total_gpus) for jid, ja in jobs.items()]
        return Commit(self.state.no_rows(view.active.token), held, frozenset(), True, lambda: jobs)

    def _standing_jobs(self, running: tuple[JobView, ...], now_s: float) -> dict[int, JobAllocation] | None:
        """The running jobs' allocations in the window's order at ``now_s`` (``None``: a mode not configured)."""
        modes = self.state.mode_index
        holding: list[JobView] = []
        held: dict[int, JobAllocation] = {}
        for job in running:  # the jobs holding GPUs (a waiting job has none); sorted below
            ja = job.allocation
            if ja:
                if ja.mode not in modes:
                    return None
                holding.append(job)
                held[job.job_id] = ja
        ordered, _ = sort_jobs(holding, now_s, self._statics, self._window_order)
        return {job.job_id: held[job.job_id] for job in ordered}

    def _quiet_request(self, commit: Commit) -> QuietTicks | None:
        """Under ``decisions="on-change"``: ask the commit's step to pass over the quiet ticks that follow.

        Not when the agent asked for the next epoch, nor when the commit rejects a job (news at the next
        epoch) or leaves a job in a mode the draft would change (the next commit would not stand), nor
        while the allocation history is drawn; only up to the first lost deadline (the simulator's horizon).
        """
        assert self.sim is not None
        if (
            self.config.decisions != "on-change"
            or self._requested
            or not commit.standing
            or not self.sim.fast_forward
            or self.render_mode == "rgb_array"
        ):
            return None
        return QuietTicks(views=True, deadlines=True)

    def _quiet_epoch(self, view: ClusterView) -> bool:
        """Under ``decisions="on-change"``: the new epoch is a round tick after which nothing changed."""
        if self.config.decisions != "on-change" or self._done:
            return False
        return view.is_tick and not view.arrived and not view.completed and not self._changed
