"""The ``decisions="on-change"`` rule of :class:`~hetgym.envs.env.HetClusterEnv`: the epochs the agent is not shown.

Under ``decisions="on-change"`` the agent is asked only at epochs with news (an arrival, a completion, a
rejection or a missed deadline; the env's ``Arguments``). A round tick after which nothing changed is a
quiet epoch: the allocation in force stands, so the environment commits it unchanged without building the
window's observation or mask, and asks the simulator to pass over the quiet ticks that follow a commit in
the same step (:mod:`hetgym.sim.fastforward`). :class:`QuietEpochs`, a member of the environment, holds
that rule and its bookkeeping: which epochs are quiet, what the standing allocation is, the request for the
ticks to pass over, whether the last step brought news and whether the agent asked to see the next epoch.
Committing and the interval accounting stay in :mod:`hetgym.envs.env`; the episode itself in
:mod:`hetgym.envs.episode`.
"""

from __future__ import annotations

from hetgym.envs.state import Commit, DecisionState, WindowOrder, sort_jobs
from hetgym.sim.allocation import JobAllocation
from hetgym.sim.engine import Simulator
from hetgym.sim.fastforward import QuietTicks
from hetgym.sim.rates import RateTable
from hetgym.sim.view import ClusterView, JobView


class QuietEpochs:
    """The quiet epochs of ``decisions="on-change"`` for one environment's decision state.

    Args:
        state: The environment's decision state (its window, draft and configured modes).
        on_change: Whether the agent is asked only on news (``decisions="on-change"``); otherwise no epoch is quiet.
        draws_history: Whether the allocation history is drawn (``render_mode="rgb_array"``): then every tick
            is stepped, so that the history has each epoch's allocation.

    Attributes:
        requested: The agent asked to see the next epoch (:meth:`HetClusterEnv.request_decision`).
        changed: The last committed step brought news: a job ended or a deadline was lost.
    """

    def __init__(self, state: DecisionState, *, on_change: bool, draws_history: bool) -> None:
        self.state = state
        self.on_change = on_change
        self.draws_history = draws_history
        self.requested = False
        self.changed = False

    def standing_commit(self, view: ClusterView, statics: RateTable, order: WindowOrder) -> Commit:
        """What committing ``view``'s epoch with an untouched draft gives: every job keeps its allocation.

        The same jobs, in the same order (the window's, under ``order``), as :meth:`DecisionState.commit`
        after :meth:`DecisionState.load`, without filling the window's arrays (only the jobs holding GPUs are
        sorted: the window order's keys are unique, so they keep their relative order); no row, so the
        simulator checks and applies nothing. A job whose mode is not one of the configured modes would be
        given the first one by the draft when in the window: then the draft is built as usual.
        """
        jobs = self.standing_jobs(view.running, view.now_s, statics, order)
        if jobs is None:
            self.state.load(view, statics, order)
            return self.state.commit()
        held = [(jid, ja.total_gpus) for jid, ja in jobs.items()]
        return Commit(self.state.no_rows(view.active.token), held, frozenset(), True, lambda: jobs)

    def standing_jobs(
        self, running: tuple[JobView, ...], now_s: float, statics: RateTable, order: WindowOrder
    ) -> dict[int, JobAllocation] | None:
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
        ordered, _ = sort_jobs(holding, now_s, statics, order)
        return {job.job_id: held[job.job_id] for job in ordered}

    def request(self, commit: Commit, sim: Simulator) -> QuietTicks | None:
        """Under ``decisions="on-change"``: ask the commit's step to pass over the quiet ticks that follow.

        Not when the agent asked for the next epoch, nor when the commit rejects a job (news at the next
        epoch) or leaves a job in a mode the draft would change (the next commit would not stand), nor
        while the allocation history is drawn; only up to the first lost deadline (the simulator's horizon).
        """
        if not self.on_change or self.requested or not commit.standing or not sim.fast_forward or self.draws_history:
            return None
        return QuietTicks(views=True, deadlines=True)

    def is_quiet(self, view: ClusterView) -> bool:
        """Under ``decisions="on-change"``: the new epoch is a round tick after which nothing changed."""
        if not self.on_change:
            return False
        return view.is_tick and not view.arrived and not view.completed and not self.changed
