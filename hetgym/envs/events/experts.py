"""Experts in the event-driven environment: any registered policy's per-job choices as actions.

The event-driven interface (``HetClusterEvents-v0``) asks one question per job: admit it (and how), or reject
it, and on which GPU type. A policy answers it implicitly in its own run; :func:`expert_choices` reads
the answers off that run on the raw simulator (the same workload, cluster and simulator settings):

* a job the policy rejected gets ``reject``;
* any other job gets ``admit`` (``"force"`` by default: admitted with the allocator's guarantee, as the
  policy kept it; or ``"auto"``: the allocator's own test decides) and, with ``types="main"``, the GPU
  type on which the policy gave it the most GPU-seconds (any type when it never ran).

For the allocator's own expert (ElasticFlow for the default allocator) these choices are exact: the
admitted jobs forced and the declined ones rejected give ElasticFlow's run, bit for bit, and so does
action 0 (the allocator's own choice) at every event (``mode="auto"``). For any other expert they are
the closest choices the interface can express, and the gap between the expert's DSR on the simulator and
that of its choices through the environment measures what the interface cannot express
(``scripts/studies/event_interface.py``).

:class:`EventExpertAgent` has Stable-Baselines3's ``predict``, so ``evaluate_policy`` scores it like a
learned agent.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from typing import Any

import numpy as np

from hetgym.envs.events.actions import AUTO_ACTION
from hetgym.envs.events.env import HetClusterEventEnv
from hetgym.sim.allocation import Allocation
from hetgym.sim.cluster import ClusterSpec
from hetgym.sim.config import SimConfig
from hetgym.sim.engine import SimulationResult, Simulator
from hetgym.sim.errors import HetgymError
from hetgym.sim.guidance import Directive
from hetgym.sim.job import JobSpec
from hetgym.sim.policy import make_policy
from hetgym.sim.view import ClusterView

#: Agents of the event interface that are not simulator policies, by name: (module, class); each is
#: constructed as ``cls(env, **knobs)`` and has SB3's ``predict`` (:func:`make_event_agent`).
EVENT_AGENTS: dict[str, tuple[str, str]] = {"lookahead": ("hetgym.lookahead", "LookaheadAgent")}

#: How an expert's choices are read (``mode=``): ``"closest"`` from its run on the simulator, ``"auto"``
#: action 0 at every event (the allocator's own choice).
MODES = ("closest", "auto")
#: What an admitted job's directive says (``admit=``).
ADMITS = ("force", "auto")
#: Which GPU type a directive names (``types=``): ``"any"`` none, ``"main"`` the one the expert used most.
TYPE_CHOICES = ("any", "main")


def _check(name: str, value: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise HetgymError(f"{name}={value!r}: give one of {list(valid)}")


def expert_run(
    policy: str, cluster: ClusterSpec, jobs: tuple[JobSpec, ...], sim: SimConfig, **policy_kwargs: Any
) -> tuple[SimulationResult, dict[int, dict[str, float]]]:
    """Run ``policy`` on the simulator; return the result and each job's GPU-seconds per GPU type."""
    pol = make_policy(policy, **policy_kwargs)
    inner = pol.schedule
    gpu_s: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    last: list[Any] = [None, 0.0]

    def recording(view: ClusterView) -> Allocation:
        before, t0 = last
        if before is not None:
            dt = view.now_s - t0
            for jid, ja in before.jobs.items():
                for t, n in ja.counts:
                    gpu_s[jid][t] += n * dt
        out = inner(view)
        last[0], last[1] = out, view.now_s
        return out

    # The instance's own attribute shadows the class's method: Simulator.run reads pol.schedule once, and the
    # policy stays itself for everything else the run reads of it (round, ticks, placer, quiet hook).
    vars(pol)["schedule"] = recording
    result = Simulator(cluster, jobs, config=sim).run(pol)
    return result, {jid: dict(v) for jid, v in gpu_s.items()}


def expert_choices(
    policy: str,
    cluster: ClusterSpec,
    jobs: tuple[JobSpec, ...],
    sim: SimConfig,
    *,
    admit: str = "force",
    types: str = "any",
    **policy_kwargs: Any,
) -> tuple[dict[int, Directive], SimulationResult]:
    """The directive per job that is closest to ``policy``'s own run (see the module docstring), and that run."""
    _check("admit", admit, ADMITS)
    _check("types", types, TYPE_CHOICES)
    result, gpu_s = expert_run(policy, cluster, jobs, sim, **policy_kwargs)
    status = dict(zip(result.jobs["job_id"].tolist(), result.jobs["status"].tolist(), strict=True))
    out: dict[int, Directive] = {}
    for spec in jobs:
        jid = spec.job_id
        if status.get(jid) == "rejected":
            out[jid] = Directive("reject")
            continue
        main = None
        used = gpu_s.get(jid)
        if types == "main" and used:
            main = max(used.items(), key=lambda kv: (kv[1], kv[0]))[0]
        out[jid] = Directive(admit, main)
    return out, result


def _unwrap(env: Any) -> HetClusterEventEnv:
    base = env.unwrapped if hasattr(env, "unwrapped") else env
    if not isinstance(base, HetClusterEventEnv):
        raise HetgymError(
            f"EventExpertAgent acts in a HetClusterEventEnv (HetClusterEvents-v0), not {type(base).__name__}"
        )
    return base


class EventExpertAgent:
    """A registered policy's per-job choices as actions of the event-driven environment (SB3's ``predict``).

    Args:
        policy: A registered policy name.
        env: The environment, or an in-process vector env of them (``DummyVecEnv``, ``SyncVectorEnv``).
        mode: ``"closest"`` (default): the choices read off the policy's own run (:func:`expert_choices`);
            ``"auto"``: action 0 at every event, the allocator's own choice.
        admit: With ``"closest"``, the admission of a job the policy kept (``"force"`` or ``"auto"``).
        types: With ``"closest"``, ``"any"`` or ``"main"`` (the type the policy used most for the job).
        **policy_kwargs: The policy's knobs.

    Attributes:
        expert_result: The policy's own run on the simulator, for each sub-env's current episode.
    """

    def __init__(
        self,
        policy: str,
        env: Any,
        *,
        mode: str = "closest",
        admit: str = "force",
        types: str = "any",
        **policy_kwargs: Any,
    ) -> None:
        _check("mode", mode, MODES)
        _check("admit", admit, ADMITS)
        _check("types", types, TYPE_CHOICES)
        self.policy = policy
        self.mode = mode
        self.admit = admit
        self.types = types
        self.policy_kwargs = policy_kwargs
        make_policy(policy, **policy_kwargs)  # an unknown policy or knob raises now
        subs = getattr(env, "envs", None)
        self._envs = [_unwrap(e) for e in (subs if subs is not None else [env])]
        self._batched = subs is not None
        self._episode = [-1] * len(self._envs)
        self._choices: list[dict[int, Directive]] = [{} for _ in self._envs]
        self.expert_result: list[SimulationResult | None] = [None] * len(self._envs)

    def action_for(self, index: int = 0) -> int:
        """The action for sub-env ``index``'s pending decision."""
        env = self._envs[index]
        if env.view is None or self.mode == "auto":
            return AUTO_ACTION
        if env.episode_id != self._episode[index]:
            self._episode[index] = env.episode_id
            choices, result = expert_choices(
                self.policy,
                env.cluster,
                env.jobs,
                env.config.sim,
                admit=self.admit,
                types=self.types,
                **self.policy_kwargs,
            )
            self._choices[index] = choices
            self.expert_result[index] = result
        directive = self._choices[index][env.job_id]
        return env.actions.closest(directive, env.usable_types())

    def predict(
        self,
        observation: Any,
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """The expert's action(s) for the env's pending decision(s) (``observation`` is not read)."""
        del observation, episode_start, deterministic
        actions = np.array([self.action_for(i) for i in range(len(self._envs))], dtype=np.int64)
        return (actions if self._batched else actions[0]), state


def make_event_agent(name: str, env: Any, **knobs: Any) -> Any:
    """The event-interface agent ``name`` in ``env``: one of :data:`EVENT_AGENTS` (e.g. ``"lookahead"``), or
    else any registered policy's closest choices (:class:`EventExpertAgent`), ``knobs`` being its arguments."""
    if name in EVENT_AGENTS:
        module, cls = EVENT_AGENTS[name]
        return getattr(importlib.import_module(module), cls)(env, **knobs)
    return EventExpertAgent(name, env, **knobs)


__all__ = [
    "ADMITS",
    "EVENT_AGENTS",
    "MODES",
    "TYPE_CHOICES",
    "EventExpertAgent",
    "expert_choices",
    "expert_run",
    "make_event_agent",
]
