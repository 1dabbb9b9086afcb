"""Rollouts: one candidate action from a fork, the rest of the episode (or a horizon) played by a base policy.

A *base policy* finishes every rollout. It is resolved by :func:`resolve_base` from:

* an ``int``: that action at every decision (``0`` is ElasticFlow, the allocator's own choice);
* ``"elasticflow"`` / ``"auto"``: action 0; ``"force"``: force the job on any GPU type (action 0 where
  forcing is not allowed, at a late event);
* an object with SB3's ``predict`` (a learned agent, MaskablePPO included: the mask is passed when its
  ``predict`` takes ``action_masks``);
* any callable ``f(observation, env) -> action``.

A base policy with ``reads_observation = False`` (the constant rules and ``"force"`` here) plays its
rollouts with the fork's admission probe off (``probe=False``): the probe only fills observation features,
so the scores are the same and a rollout costs less.

For rollouts on worker processes the base policy must pickle (an ``int``, a name, a top-level function
or an agent that pickles).

A rollout's *score* is in deadline jobs: ``(met - missed) / 2`` over the deadline outcomes the simulator
settles from the candidate's step on (:meth:`~hetgym.sim.engine.Simulator.deadline_log`). Over a complete
rollout every deadline job is settled, so between two candidates on one future the score differs by exactly
the difference in jobs met. With ``horizon_h`` the fork's simulator stops that many simulated hours after
the root (its ``max_time_s``), and a job left unfinished there with its deadline still ahead counts 0,
halfway between met (+1/2) and missed (-1/2); a deadline passed before the stop counts as missed. With
``horizon_arrivals`` the rollout stops after that many further decisions and jobs not settled by then
count 0 (the step after the last arrival still runs to the end, since no decision follows it).

:func:`run_tasks` scores a batch of (future, candidate) pairs: in this process (one worker: nothing
pickles) or through :func:`hetgym.sweep.map_runs` (the local pool) or Ray, chunked by future so each worker
draws a future once. Every score is a pure function of the root state, the future's seed and the
candidate, so the scores do not depend on the number of workers.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import pickle
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hetgym.lookahead.forking import fork_env
from hetgym.lookahead.futures import apply_future, sample_future
from hetgym.sim.errors import HetgymError
from hetgym.sim.guidance import Directive

#: Names a base policy may be given by.
BASE_NAMES = ("elasticflow", "auto", "force")


class _Constant:
    #: A rule that reads no observation: its rollouts skip the observation's admission probe.
    reads_observation = False

    def __init__(self, action: int) -> None:
        self.action = int(action)

    def __call__(self, obs: Any, env: Any) -> int:
        return self.action


class _Force:
    reads_observation = False  # reads the mask only

    def __call__(self, obs: Any, env: Any) -> int:
        force = env.actions.index(Directive("force"))
        return force if bool(env.action_masks()[force]) else 0


class _Agent:
    def __init__(self, agent: Any) -> None:
        self.agent = agent
        try:
            self.masks = "action_masks" in inspect.signature(agent.predict).parameters
        except (TypeError, ValueError):
            self.masks = False

    def __call__(self, obs: Any, env: Any) -> int:
        kwargs = {"action_masks": env.action_masks()} if self.masks else {}
        action, _ = self.agent.predict(obs, deterministic=True, **kwargs)
        return int(np.asarray(action).reshape(-1)[0])


def resolve_base(base: Any) -> Callable[[Any, Any], int]:
    """The base policy ``base`` as a function ``(observation, env) -> action`` (see the module docstring)."""
    if isinstance(base, (bool, np.bool_)):
        raise HetgymError(f"base={base!r}: give an action (int), one of {list(BASE_NAMES)}, an agent or a callable")
    if isinstance(base, (int, np.integer)):
        return _Constant(int(base))
    if isinstance(base, str):
        if base in ("elasticflow", "auto"):
            return _Constant(0)
        if base == "force":
            return _Force()
        raise HetgymError(f"base={base!r}: give one of {list(BASE_NAMES)}, an action (int), an agent or a callable")
    if callable(getattr(base, "predict", None)):
        return _Agent(base)
    if callable(base):
        return base
    raise HetgymError(f"base={base!r}: give an action (int), one of {list(BASE_NAMES)}, an agent or a callable")


@dataclass(frozen=True)
class Horizon:
    """Where a rollout stops: simulated hours after the root, further decisions (``None``: the end)."""

    hours: float | None = None
    arrivals: int | None = None


def rollout(env: Any, action: int, base: Callable[[Any, Any], int], horizon: Horizon) -> float:
    """Take ``action`` in ``env`` (a fork, consumed), let ``base`` play on; the score in jobs."""
    sim = env.sim
    stop_s = math.inf
    if horizon.hours is not None:
        stop_s = float(env.view.now_s) + horizon.hours * 3600.0
        if stop_s < sim.config.max_time_s:
            # The fork's own simulator stops there (its configuration is a frozen value: replaced, not edited).
            sim.config = dataclasses.replace(sim.config, max_time_s=stop_s)
        else:
            stop_s = math.inf
    if getattr(base, "reads_observation", True) is False and env.config.probe:
        # A base policy that reads no observation: the fork skips the admission probe, which only fills
        # observation features (it changes nothing the allocator remembers), so the score is the same.
        env.config = dataclasses.replace(env.config, probe=False)
    cursor = len(sim.deadline_log())
    obs, _, terminated, truncated, _ = env.step(int(action))
    steps = 0
    while not (terminated or truncated):
        if horizon.arrivals is not None and steps >= horizon.arrivals:
            break
        obs, _, terminated, truncated, _ = env.step(base(obs, env))
        steps += 1
    deadline_of = {s.job_id: s.deadline_s for s in sim.specs}
    score = 0.0
    for outcome in sim.deadline_log(cursor):
        if outcome.met:
            score += 0.5
        elif not (outcome.time_s >= stop_s and deadline_of[outcome.job_id] > stop_s):
            score -= 0.5  # lost; a job left unfinished at the horizon with its deadline ahead counts 0
    return score


@dataclass(frozen=True)
class FutureTask:
    """Score ``candidates`` on one future: seed ``seed`` (or the true future when ``None``)."""

    sample: int
    seed: int | None
    candidates: tuple[int, ...]


def score_future(root: Any, task: FutureTask, base: Callable[[Any, Any], int], horizon: Horizon) -> list[float]:
    """The score of each candidate of ``task`` from ``root`` (not changed) on the task's future."""
    env = fork_env(root)
    if task.seed is not None:
        apply_future(env, sample_future(env, task.seed))
    out = []
    last = len(task.candidates) - 1
    for i, action in enumerate(task.candidates):
        # The last candidate may consume the future's own fork: one copy fewer per future.
        out.append(rollout(env if i == last else fork_env(env), action, base, horizon))
    return out


def _score_chunk(
    payload: bytes, tasks: Sequence[FutureTask], base: Callable[[Any, Any], int], horizon: Horizon
) -> tuple[list[list[float]], float]:
    """A worker's share: the root (pickled once per chunk), its futures' scores and the CPU-s they took."""
    t0 = time.process_time()
    root = pickle.loads(payload)
    scores = [score_future(root, task, base, horizon) for task in tasks]
    return scores, time.process_time() - t0


def _chunk_call(args: tuple[bytes, tuple[FutureTask, ...], Any, Horizon]) -> tuple[list[list[float]], float]:
    return _score_chunk(*args)


def run_tasks(
    root: Any,
    tasks: Sequence[FutureTask],
    base: Callable[[Any, Any], int],
    horizon: Horizon,
    *,
    workers: int = 1,
    backend: str = "local",
    pool: Any = None,
) -> tuple[list[list[float]], float]:
    """The scores of every task (in order) and the CPU-s the worker processes spent (0 in this process).

    ``pool``: a pool from :func:`hetgym.sweep.open_pool` kept across batches (local backend), or ``None``
    for one per batch."""
    if workers <= 1 or len(tasks) <= 1:
        return [score_future(root, task, base, horizon) for task in tasks], 0.0
    payload = pickle.dumps(root)
    count = min(workers, len(tasks))
    chunks = [tuple(tasks[i::count]) for i in range(count)]
    items = [(payload, chunk, base, horizon) for chunk in chunks]
    if backend == "ray":
        results = _map_ray(items, count)
    else:
        from hetgym.sweep import map_runs

        results = map_runs(_chunk_call, items, workers=count, pool=pool)
    scores: list[list[float]] = [[] for _ in tasks]
    cpu_s = 0.0
    for i, (chunk_scores, chunk_cpu_s) in enumerate(results):
        cpu_s += chunk_cpu_s
        for j, s in enumerate(chunk_scores):
            scores[i + j * count] = s
    return scores, cpu_s


def _map_ray(items: list[Any], workers: int) -> list[Any]:
    """The chunks on Ray (hetgym.sweep's instance: started on this machine or connected), results in order."""
    from hetgym.sweep import init_ray

    init_ray(None, workers)
    import ray

    task = ray.remote(num_cpus=1)(_chunk_call)
    return list(ray.get([task.remote(item) for item in items]))


__all__ = ["BASE_NAMES", "FutureTask", "Horizon", "resolve_base", "rollout", "run_tasks", "score_future"]
