"""Whole episodes with the lookahead teacher, and the hindsight oracle the benchmark suite calls.

:func:`play_lookahead` plays one workload with a :class:`~hetgym.lookahead.teacher.LookaheadTeacher` and
returns its DSR, CPU-s and per-decision records; :func:`play_rule` plays a base policy alone (the
reference the teacher is compared with, paired on the same workload). :func:`hindsight_oracle` is the
teacher with the true future: an upper reference, labelled ``"oracle (hindsight)"``, never a policy result.
"""

from __future__ import annotations

import time
from typing import Any

import gymnasium as gym

from hetgym.lookahead.knobs import ORACLE_LABEL, LookaheadKnobs
from hetgym.lookahead.rollout import resolve_base
from hetgym.lookahead.teacher import LookaheadTeacher
from hetgym.sim.errors import HetgymError


def _make(env_id: str, env_kwargs: dict[str, Any] | None) -> Any:
    import hetgym  # noqa: F401  (registers the ids)

    return gym.make(env_id, **(env_kwargs or {}))


def play_rule(env_id: str, env_kwargs: dict[str, Any] | None, workload_seed: int, base: Any = 0) -> dict[str, Any]:
    """One episode of workload ``workload_seed`` played by the base policy ``base`` alone."""
    t0 = time.process_time()
    env = _make(env_id, env_kwargs)
    act = resolve_base(base)
    obs, info = env.reset(seed=workload_seed, options={"workload_seed": workload_seed})
    u = env.unwrapped
    decisions = 0
    while True:
        obs, _, terminated, truncated, info = env.step(act(obs, u))
        decisions += 1
        if terminated or truncated:
            break
    env.close()
    return {
        "dsr": float(info["metrics"]["dsr"]),
        "cpu_s": time.process_time() - t0,
        "decisions": decisions,
    }


def play_lookahead(
    env_id: str, env_kwargs: dict[str, Any] | None, workload_seed: int, teacher: LookaheadTeacher
) -> dict[str, Any]:
    """One episode of workload ``workload_seed`` played by ``teacher``: DSR, CPU-s (this process and its
    rollout workers), decisions, deviations, the label and each decision's record."""
    t0 = time.process_time()
    env = _make(env_id, env_kwargs)
    obs, info = env.reset(seed=workload_seed, options={"workload_seed": workload_seed})
    first = len(teacher.records)
    while True:
        action = teacher.decide(env, obs)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    env.close()
    records = teacher.records[first:]
    # This process's CPU plus what its rollout workers reported (zero when they ran here).
    cpu_s = time.process_time() - t0 + sum(r.worker_cpu_s for r in records)
    return {
        "label": teacher.label,
        "dsr": float(info["metrics"]["dsr"]),
        "cpu_s": cpu_s,
        "decisions": len(records),
        "deviations": sum(r.deviated for r in records),
        "futures": sum(r.futures for r in records),
        "records": [r.to_dict() for r in records],
    }


def hindsight_oracle(
    env_id: str, env_kwargs: dict[str, Any] | None, workload_seed: int, *, base_action: Any = 0, **knobs: Any
) -> dict[str, Any]:
    """The lookahead with the true future on workload ``workload_seed``: an oracle reference (hindsight).

    Args:
        env_id: An event-driven id (``HetClusterEvents-v0``, ``HetClusterEvents-Tiny-v0``, ...).
        env_kwargs: ``gym.make`` overrides, or ``None``.
        workload_seed: The workload.
        base_action: The base policy finishing each rollout and kept unless a candidate gains
            ``min_gain_jobs`` (default ElasticFlow, action 0; ``"force"`` or any base policy).
        **knobs: Other :class:`~hetgym.lookahead.knobs.LookaheadKnobs` fields (``future`` is fixed).

    Returns:
        ``{"label": "oracle (hindsight)", "dsr", "cpu_s", "decisions", "deviations", "futures", "records"}``.
    """
    if knobs.pop("future", "hindsight") != "hindsight":
        raise HetgymError("hindsight_oracle: the future is the true one; leave out future= (or use play_lookahead)")
    with LookaheadTeacher(base_action, LookaheadKnobs.make(future="hindsight", **knobs)) as teacher:
        out = play_lookahead(env_id, env_kwargs, workload_seed, teacher)
    out["label"] = ORACLE_LABEL
    return out


__all__ = ["hindsight_oracle", "play_lookahead", "play_rule"]
