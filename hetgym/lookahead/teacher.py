"""The lookahead teacher of the event interface: rollout policy improvement over a base policy.

At each decision of a :class:`~hetgym.envs.events.HetClusterEventEnv` the teacher

1. takes the valid actions as candidates and the base policy's action as the default;
2. scores every candidate on ``k_initial`` futures (:mod:`hetgym.lookahead.futures`), the *same* futures
   for every candidate (common random numbers), each rollout finished by the base policy
   (:mod:`hetgym.lookahead.rollout`);
3. while the leading candidate's mean paired gain over the base action is at least ``close_gain_jobs``
   but not significant, adds ``k_step`` futures (up to ``k_max``) for the base action and the
   ``prune_to`` leaders only;
4. deviates from the base action only for a candidate whose paired gain is significant
   (:mod:`hetgym.lookahead.significance`), the one with the largest mean gain among them.

This is Bertsekas and Castañon's rollout algorithm ("Rollout algorithms for stochastic scheduling
problems", Journal of Heuristics, 1999) with sampled futures; the deviation rule keeps the base action
where the futures cannot tell candidates apart. With ``future="hindsight"`` the one future is the true one
(an oracle reference, labelled ``"oracle (hindsight)"``; never a policy result).

Each decision leaves a record in :attr:`LookaheadTeacher.records` (CPU-s, futures used, candidates,
margin, chosen action).
"""

from __future__ import annotations

import math
import time
import weakref
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hetgym.lookahead.futures import check_samplable, sample_seed
from hetgym.lookahead.knobs import LookaheadKnobs
from hetgym.lookahead.rollout import FutureTask, Horizon, resolve_base, run_tasks
from hetgym.lookahead.significance import PairedGain, paired_gain, significant
from hetgym.sim.errors import HetgymError


@dataclass(frozen=True)
class DecisionRecord:
    """What the teacher did at one decision (``cpu_s`` counts worker processes too: ``worker_cpu_s``)."""

    decision: int
    job_id: int
    now_s: float
    base_action: int
    chosen: int
    deviated: bool
    candidates: tuple[int, ...]
    futures: int
    margin_jobs: float
    p_value: float
    cpu_s: float
    worker_cpu_s: float
    label: str

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["candidates"] = list(self.candidates)
        return out


def _unwrap(env: Any) -> Any:
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    if not (hasattr(base, "sim") and hasattr(base, "action_masks") and hasattr(base, "actions")):
        raise HetgymError(
            f"the lookahead teacher acts in an event-driven environment (HetClusterEvents-*), not {type(base).__name__}"
        )
    return base


class LookaheadTeacher:
    """Scores candidate actions by rollouts over sampled futures (see the module docstring).

    Args:
        base: The base policy (:func:`~hetgym.lookahead.rollout.resolve_base`): default ``0``, ElasticFlow.
        knobs: :class:`LookaheadKnobs`, or ``None`` for the defaults.
    """

    def __init__(self, base: Any = 0, knobs: LookaheadKnobs | None = None) -> None:
        self.knobs = knobs or LookaheadKnobs()
        self.base = resolve_base(base)
        self.horizon = Horizon(self.knobs.horizon_h, self.knobs.horizon_arrivals)
        self.records: list[DecisionRecord] = []
        self._pool: Any = None

    def close(self) -> None:
        """Shut down the rollout workers (a local pool started on the first parallel decision), if any."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LookaheadTeacher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _local_pool(self) -> Any:
        """The teacher's worker pool, started once and kept across decisions (spawn costs per worker)."""
        if self.knobs.workers > 1 and self.knobs.backend == "local" and self._pool is None:
            from hetgym.sweep import open_pool

            self._pool = open_pool(self.knobs.workers)
            weakref.finalize(self, self._pool.shutdown, wait=False, cancel_futures=True)
        return self._pool

    @property
    def label(self) -> str:
        return self.knobs.label

    def decide(self, env: Any, observation: Any = None) -> int:
        """The action for ``env``'s pending decision (``observation``: what the base policy reads)."""
        t0 = time.process_time()
        u = _unwrap(env)
        if u.view is None:
            return 0
        knobs = self.knobs
        if not knobs.hindsight:
            check_samplable(u)
        if observation is None:
            observation = u._observation()  # the env's current observation, as its last step returned it
        mask = u.action_masks()
        base_action = int(self.base(observation, u))
        if not mask[base_action]:
            base_action = 0
        candidates = tuple(int(a) for a in np.flatnonzero(mask))
        decision = int(u.num_decisions)
        worker_cpu_s = 0.0
        scores: dict[int, list[float]] = {a: [] for a in candidates}
        if len(candidates) == 1:
            gains: list[PairedGain] = []
            futures = 0
        else:
            first = 1 if knobs.hindsight else knobs.k_initial
            worker_cpu_s += self._score(u, decision, range(first), candidates, scores)
            futures = first
            gains = self._gains(scores, base_action, futures)
            alive = candidates
            while not knobs.hindsight and futures < knobs.k_max:
                leader = gains[0] if gains else None
                if leader is None or leader.mean_jobs < knobs.close_gain_jobs:
                    break
                if significant(leader, knobs, len(candidates) - 1):
                    break
                if knobs.prune_to is not None and alive is candidates:
                    alive = tuple(sorted({base_action, *(g.action for g in gains[: knobs.prune_to])}))
                more = range(futures, min(knobs.k_max, futures + knobs.k_step))
                worker_cpu_s += self._score(u, decision, more, alive, scores)
                futures = more.stop
                gains = self._gains({a: scores[a] for a in alive}, base_action, futures)
        passing = [g for g in gains if significant(g, knobs, len(candidates) - 1)]
        chosen = passing[0].action if passing else base_action
        top = passing[0] if passing else (gains[0] if gains else None)
        self.records.append(
            DecisionRecord(
                decision=decision,
                job_id=int(u.job_id),
                now_s=float(u.view.now_s),
                base_action=base_action,
                chosen=chosen,
                deviated=chosen != base_action,
                candidates=candidates,
                futures=futures,
                margin_jobs=top.mean_jobs if top is not None else 0.0,
                p_value=top.p_value if top is not None else math.nan,
                cpu_s=time.process_time() - t0 + worker_cpu_s,
                worker_cpu_s=worker_cpu_s,
                label=self.label,
            )
        )
        return chosen

    def _score(
        self, root: Any, decision: int, samples: range, candidates: tuple[int, ...], scores: dict[int, list[float]]
    ) -> float:
        """Score ``candidates`` on futures ``samples`` (appended to ``scores``); the workers' CPU-s."""
        hindsight = self.knobs.hindsight
        tasks = [
            FutureTask(k, None if hindsight else sample_seed(root.workload_seed, decision, k), candidates)
            for k in samples
        ]
        results, cpu_s = run_tasks(
            root,
            tasks,
            self.base,
            self.horizon,
            workers=self.knobs.workers,
            backend=self.knobs.backend,
            pool=self._local_pool(),
        )
        for per_future in results:
            for action, score in zip(candidates, per_future, strict=True):
                scores[action].append(score)
        return cpu_s

    def _gains(self, scores: dict[int, list[float]], base_action: int, futures: int) -> list[PairedGain]:
        """Each candidate's paired gain over the base action on the futures both have, best first."""
        base = np.asarray(scores[base_action][:futures])
        out = []
        for action, values in scores.items():
            if action == base_action or len(values) < futures:
                continue
            out.append(paired_gain(action, np.asarray(values[:futures]) - base, self.knobs.test))
        return sorted(out, key=lambda g: (-g.mean_jobs, g.action))


class LookaheadAgent:
    """The teacher with Stable-Baselines3's ``predict``, acting in one event-driven environment.

    Args:
        env: The environment it acts in (possibly wrapped).
        base: The base policy (default ``0``, ElasticFlow).
        **knobs: :class:`LookaheadKnobs` fields.
    """

    def __init__(self, env: Any, base: Any = 0, **knobs: Any) -> None:
        self.env = env
        _unwrap(env)
        self.teacher = LookaheadTeacher(base, LookaheadKnobs.make(**knobs))

    @property
    def records(self) -> list[DecisionRecord]:
        return self.teacher.records

    def action_for(self, observation: Any = None) -> int:
        return self.teacher.decide(self.env, observation)

    def predict(
        self,
        observation: Any,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """The teacher's action for the env's pending decision."""
        del episode_start, deterministic
        return np.int64(self.action_for(observation)), state  # type: ignore[return-value]


__all__ = ["DecisionRecord", "LookaheadAgent", "LookaheadTeacher"]
