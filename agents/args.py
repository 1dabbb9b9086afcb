"""The recipes' arguments: one dataclass hierarchy, with a docstring per field (cleanrl style).

:class:`RunArgs` holds what every recipe takes; :class:`ImitationArgs` (BC, DAgger), :class:`RoundArgs`
(the rounds of DAgger and expert iteration) and :class:`OnPolicyArgs` (PPO's hyperparameters, on either
interface) what some share; each ``hetgym train --algo`` choice's class (:data:`RECIPE_ARGS`) adds its own
fields and defaults. They live apart from the recipes (:mod:`agents.bc`, :mod:`agents.dagger`,
:mod:`agents.ppo`, :mod:`agents.exit`, :mod:`agents.event_recipes`), which import torch, so that the
``hetgym`` command can list their options without importing torch. Seed lists are read by the project's
one parser (:func:`parse_seeds`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar

from hetgym.limits import MAX_NUM_ENVS
from hetgym.seeds import parse_seeds as _parse_seeds
from hetgym.sim.errors import HetgymError


class AgentError(HetgymError, ValueError):
    """Bad input to a recipe or a checkpoint that cannot be used (the message says what to fix)."""


#: Learning-rate schedules of behaviour cloning's fits (:func:`agents.bc.fit`).
LR_SCHEDULES: tuple[str, ...] = ("constant", "cosine")


def check_lr_schedule(name: str) -> None:
    """Refuse an unknown learning-rate schedule, naming the valid ones."""
    if name not in LR_SCHEDULES:
        raise AgentError(f"lr_schedule={name!r}: choose one of {', '.join(LR_SCHEDULES)}")


def parse_teacher(spec: str) -> tuple[str, dict[str, Any]]:
    """A teacher spec, ``NAME`` or ``NAME:KEY=VALUE[,KEY=VALUE...]``, as ``(name, knobs)``.

    ``"dancer:memory=observed"`` -> ``("dancer", {"memory": "observed"})``. Values are read as YAML
    (``60`` is a number, ``true`` a boolean). The policy must be registered and the knobs must be its
    own, with valid values: an unknown knob raises naming the nearest valid ones, a bad value a
    :class:`~hetgym.sim.registry.KnobError` naming the knob.
    """
    from hetgym.sim.policy import make_policy

    name, sep, rest = str(spec).partition(":")
    name = name.strip()
    if not name:
        raise AgentError(f"teacher {spec!r}: give a policy name, e.g. dancer or dancer:memory=observed")
    import yaml

    knobs: dict[str, Any] = {}
    for item in rest.split(",") if sep else []:
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise AgentError(f"teacher {spec!r}: {item!r} is not KEY=VALUE; write e.g. dancer:memory=observed")
        try:
            knobs[key.strip()] = yaml.safe_load(text)
        except yaml.YAMLError:
            knobs[key.strip()] = text
    make_policy(name, **knobs)  # refuses an unknown policy, an unknown knob or a bad value, naming it
    return name, knobs


#: The project's seed parser (:func:`hetgym.seeds.parse_seeds`) raising the recipes' :class:`AgentError`.
parse_seeds = partial(_parse_seeds, error=AgentError)


#: ``hetgym train --vec``: where the training environments run (``agents.vec.make_train_venv``): ``dummy``,
#: SB3's ``DummyVecEnv`` (in this process); ``subproc``, its ``SubprocVecEnv`` (a worker process each).
VEC_KINDS: tuple[str, ...] = ("dummy", "subproc")


def check_vec_options(n_envs: Any, vec: Any) -> None:
    """Refuse an ``n_envs`` / ``vec`` pair no vector env can be built from, saying what to give instead."""
    if isinstance(n_envs, bool) or not isinstance(n_envs, int) or n_envs < 1:
        raise AgentError(
            f"--n-envs {n_envs!r}: give the number of environments stepped together, an integer >= 1 "
            "(--n-envs 1 for one; --n-envs 2 --vec subproc runs two in worker processes)"
        )
    if n_envs > MAX_NUM_ENVS:
        raise AgentError(
            f"--n-envs {n_envs} is more than {MAX_NUM_ENVS}: each environment holds its own simulator; "
            f"give at most {MAX_NUM_ENVS} (about the number of cores with --vec subproc)"
        )
    if vec not in VEC_KINDS:
        raise AgentError(
            f"--vec {vec!r}: give dummy (every environment in this process) or subproc (one worker process each)"
        )


#: ``hetgym train --smoke``: budgets under which every recipe checks its whole pipeline (collection,
#: training, saving, evaluation) in under a minute of one core's time, on the default id too: one teacher
#: episode, one epoch, one DAgger round, 512 PPO steps, one held-out workload, capped episodes. Keyed by
#: the arguments class; options given explicitly win.
SMOKE_BUDGETS: dict[str, dict[str, Any]] = {
    "BCArgs": {"train_seeds": "0", "val_seeds": "100", "eval_seeds": "1000", "epochs": 1, "max_steps": 2_000},
    "DAggerArgs": {
        "train_seeds": "0",
        "val_seeds": "100",
        "eval_seeds": "1000",
        "epochs": 1,
        "rounds": 1,
        "episodes_per_round": 1,
        "epochs_per_round": 1,
        "max_steps": 2_000,
    },
    "ExItArgs": {
        "train_seeds": "0",
        "val_seeds": "900",
        "rounds": 1,
        "episodes_per_round": 1,
        "epochs": 2,
        "epochs_per_round": 1,
        "k_initial": 2,
        "k_max": 2,
        "horizon_arrivals": 2,
        "label_fraction": 0.5,
    },
    "PPOArgs": {
        "total_timesteps": 512,
        "n_steps": 256,
        "batch_size": 64,
        "n_epochs": 1,
        "eval_seeds": "1000",
        "max_steps": 2_000,
    },
    **{
        name: {
            "total_timesteps": 512,
            "n_envs": 2,
            "n_steps": 128,
            "batch_size": 64,
            "n_epochs": 1,
            "checkpoint_every": 256,
            "eval_seeds": "1000",
            **extra,
        }
        for name, extra in (
            ("EventPPOArgs", {}),
            ("KickstartArgs", {"teacher_seeds": "0", "bc_epochs": 1, "critic_epochs": 1, "distill_steps": 256}),
            ("CurriculumArgs", {"stages": "12:4:256,24:8:256"}),
        )
    },
}
#: Where smoke runs are saved unless ``out_dir`` is given (apart from real runs).
SMOKE_OUT_DIR = "runs/smoke"


def smoke_options(cls: type, given: dict[str, Any]) -> dict[str, Any]:
    """``cls``'s :data:`SMOKE_BUDGETS` (and :data:`SMOKE_OUT_DIR`) for the options not in ``given``."""
    budgets = {**SMOKE_BUDGETS[cls.__name__], "out_dir": SMOKE_OUT_DIR}
    return {k: v for k, v in budgets.items() if given.get(k) is None}


@dataclass
class RunArgs:
    """What every recipe takes: the environment, the seed, the torch threads and the run folder.

    The recipes' argument classes extend it (one hierarchy): :class:`ImitationArgs` (``bc``, ``dagger``),
    :class:`RoundArgs` (the rounds of ``dagger`` and ``exit``), :class:`OnPolicyArgs` (PPO's, on either
    interface). ``hetgym train`` offers the union of their fields as options (:mod:`agents.cli_args`).
    """

    #: The ``hetgym train --algo`` choice whose arguments the class holds (the scope ``--help`` shows).
    choice: ClassVar[str] = ""

    env_id: str = "HetCluster-v1"
    """Registered environment id."""
    env: dict[str, Any] = field(default_factory=dict)
    """``gym.make`` overrides on top of the agents' defaults (``agents.common.agent_env_defaults``)."""
    seed: int = 0
    """Seed of everything the run draws: the network's initialisation, the minibatch order, the environments
    and the recipe's own draws."""
    torch_threads: int = 1
    """Torch threads."""
    run_name: str | None = None
    """Run folder name (default: cleanrl-style ``<env>__<recipe>[-<teacher>]__<seed>__<time>``)."""
    out_dir: str = "runs"
    """Parent folder of the run folders."""
    track: bool = True
    """Log to TensorBoard (``<run>/tb``)."""


@dataclass
class RoundArgs(RunArgs):
    """The rounds of a DAgger loop (``dagger``, ``exit``): who acts in each round's episodes, and the fits."""

    rounds: int = 3
    """Rounds after round 0."""
    episodes_per_round: int = 1
    """Episodes collected per round."""
    beta_schedule: str = "linear"
    """The teacher's share of the actions per round: ``linear``, ``exponential`` or ``constant``
    (:func:`agents.dagger.beta_at`)."""
    rampdown_rounds: int = 2
    """Linear schedule: rounds until the learner acts alone."""
    decay: float = 0.5
    """Exponential schedule's factor."""
    beta: float = 0.5
    """Constant schedule's value."""
    epochs_per_round: int = 3
    """Epochs over the aggregated data after each later round."""


@dataclass
class ImitationArgs(RunArgs):
    """What the imitation recipes (``bc``, ``dagger``) share: the teacher, the network, the seeds, the fit."""

    teacher: str = "dancer"
    """The expert to learn from (any registered policy), with knobs as ``NAME:KEY=VALUE[,KEY=VALUE]``; for
    DAgger prefer a teacher whose label is a function of the state, e.g. ``dancer:memory=observed``."""
    algo: str = "maskable-ppo"
    """The algorithm whose archive the result is saved in (the one it will be fine-tuned with)."""
    arch: str = "slot"
    """Policy network: ``slot`` (shared per-slot network; with ``codec=jobwise`` the ``set`` network),
    ``slot-flat``, ``set`` (order-invariant, for ``codec=jobwise``) or ``mlp`` (SB3's MultiInputPolicy)."""
    hidden: int = 128
    """Width of the network."""
    attention_layers: int = 0
    """Self-attention layers across slots (``slot`` and ``set``)."""
    decoding: str | None = None
    """Deterministic actions of the set network (``--arch set``, ``codec=jobwise``): ``argmax``, or
    ``kind-first`` (the likeliest kind of action, a GPU set action against none, keep, reject and done,
    then the likeliest action of that kind; docs/agents.md); none: argmax, or an ``--init`` model's own."""
    train_seeds: str = "0-3"
    """Workload seeds of the teacher's training episodes (DAgger's round 0; later rounds take the seeds after
    them)."""
    val_seeds: str = "100"
    """Workload seeds of the held-out states on which agreement is measured."""
    eval_seeds: str = "1000-1002"
    """Held-out workload seeds on which the result and the teacher are evaluated (empty: skip)."""
    demos: str | None = None
    """Load the teacher's demonstrations from this ``.npz`` (a BC run's ``--save-demos``; several,
    comma-separated, are pooled) instead of collecting them."""
    obs_dtype: str = "float32"
    """Storage precision of the training observations, ``float32`` or ``float16`` (half the memory; values
    in [-1, 1] round by at most 2.4e-4)."""
    epochs: int = 8
    """Passes over the demonstrations (DAgger: in round 0)."""
    batch_size: int = 256
    """Minibatch size."""
    lr: float = 1e-3
    """Adam learning rate."""
    lr_schedule: str = "constant"
    """``constant``, or ``cosine``: the rate falls from ``lr`` to 0 over each fit's minibatches."""
    ent_weight: float = 1e-3
    """Entropy bonus weight."""
    l2_weight: float = 0.0
    """L2 penalty weight."""
    value_weight: float = 0.5
    """Weight of the critic's fit to the discounted returns of the episodes (0: leave the critic untrained)."""
    gamma: float = 0.99
    """Discount of those returns (use the fine-tuning run's)."""
    max_steps: int = 200_000
    """Step limit of an episode (rollouts and evaluation)."""


@dataclass
class BCArgs(ImitationArgs):
    """Arguments of the behaviour-cloning recipe (``hetgym train --algo bc``).

    The defaults clone 4 teacher episodes for 8 epochs on ``HetCluster-v1``, the id built for learning;
    ``docs/agents.md`` gives a larger configuration and the measured times.
    """

    choice: ClassVar[str] = "bc"

    save_demos: bool = False
    """Save the collected demonstrations in the run folder (``demos.npz``)."""


@dataclass
class DAggerArgs(ImitationArgs, RoundArgs):
    """Arguments of the DAgger recipe (``hetgym train --algo dagger``).

    The defaults (4 teacher episodes and 8 epochs of cloning, then 3 rounds of one learner episode and 3
    epochs each) run on ``HetCluster-v1``; see ``docs/agents.md`` for a larger configuration.
    """

    choice: ClassVar[str] = "dagger"

    init: str | None = None
    """Start from this saved clone (a run folder or its ``.pt`` weights) instead of cloning in round 0."""
    trust_pickle: bool = False
    """Let ``init`` be an SB3 ``.zip`` archive: it is unpickled, which runs any code the file carries (only
    for files you made or trust; docs/security.md)."""
    first_round_seed: int | None = None
    """Workload seed of round 1's first episode (later episodes take the seeds after it, skipping held-out
    ones); none: the seed after round 0's last. Set it when continuing from an ``--init`` DAgger agent, so
    that its rounds visit workloads the earlier run did not."""


@dataclass
class ExItArgs(RoundArgs):
    """Arguments of expert iteration (``hetgym train --algo exit``, :mod:`agents.exit`).

    A lookahead teacher (:class:`hetgym.lookahead.LookaheadTeacher`) labels states of the event interface;
    an MLP student on the flat observation is fitted to the labels by masked cross-entropy; from round 1
    the student acts (DAgger) and finishes the teacher's rollouts. The defaults fit ``HetClusterEvents-Tiny-v0``
    on two cores; ``docs/agents.md`` ("Expert iteration") gives the measured costs.
    """

    choice: ClassVar[str] = "exit"

    env_id: str = "HetClusterEvents-Tiny-v0"
    """An event-driven id (``HetClusterEvents-v0``, ``HetClusterEvents-Tiny-v0``, ...); observations are flat."""
    env: dict[str, Any] = field(default_factory=dict)
    """``gym.make`` overrides (``flatten=True`` is always added)."""
    base: str = "force"
    """Round 0's fixed base policy of the teacher: ``force``, ``elasticflow`` or an action number."""
    train_seeds: str = "0-3"
    """Workload seeds of round 0 (the teacher plays them); later rounds take the seeds after them."""
    val_seeds: str = "900-902"
    """Training-range workload seeds held out from labelling: the student's DSR per round."""
    rounds: int = 2
    episodes_per_round: int = 2
    """Episodes per round >= 1 (the first ``teacher_episodes`` of them played by the teacher alone)."""
    teacher_episodes: int = 1
    """Episodes per round >= 1 that the teacher plays alone (its DSR per round, over the latest student)."""
    label_fraction: float = 1.0
    """Share of the student's decisions the teacher labels in a round >= 1 (drawn at random, seeded);
    the teacher's own decisions are always labels."""
    k_initial: int = 2
    """Teacher: futures every candidate is scored on first."""
    k_step: int = 2
    """Teacher: futures added while the leader is close."""
    k_max: int = 4
    """Teacher: most futures per decision."""
    min_gain_jobs: float = 1.0
    """Teacher: smallest mean paired gain (jobs) to deviate from the base action."""
    horizon_h: float | None = None
    """Teacher: stop rollouts this many simulated hours after the decision (none: the end)."""
    horizon_arrivals: int | None = None
    """Teacher: stop rollouts after this many further decisions (none: the end)."""
    workers: int = 1
    """Teacher: rollout processes (1: this process)."""
    hidden: int = 64
    """Student: two hidden layers of ``2 * hidden`` (actor and critic)."""
    epochs: int = 30
    """Cloning epochs in round 0."""
    epochs_per_round: int = 15
    batch_size: int = 64
    """Minibatch size."""
    lr: float = 1e-3
    """Adam learning rate."""
    ent_weight: float = 1e-3
    """Entropy bonus weight."""
    resume: bool = False
    """Continue the run folder's last checkpoint (labels, round, student weights) instead of starting."""


@dataclass
class OnPolicyArgs(RunArgs):
    """PPO's hyperparameters, the vector env and the held-out seeds: what every PPO recipe shares (``ppo``,
    ``maskable-ppo`` on the window ids; ``events-ppo``, ``kickstart``, ``curriculum`` on the event ids)."""

    total_timesteps: int = 50_000
    """Environment steps to train for."""
    n_envs: int = 1
    """Environments stepped together (each rollout holds n_steps of each)."""
    vec: str = "dummy"
    """Where they run: dummy (in this process, SB3's DummyVecEnv) or subproc (one worker process each,
    SubprocVecEnv: their steps use other cores)."""
    n_steps: int = 2048
    """Steps per environment and rollout."""
    batch_size: int = 256
    """Minibatch size."""
    n_epochs: int = 4
    """Passes over each rollout."""
    learning_rate: float | None = None
    """Adam learning rate (default: 1e-5 when fine-tuning, 3e-4 from scratch)."""
    gamma: float = 0.99
    """Discount factor (per step; with ``time_discount``, per hour of simulated time)."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    ent_coef: float | None = None
    """Entropy bonus (default: 0 when fine-tuning, 0.01 from scratch)."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many steps (0: only the final model)."""
    eval_seeds: str = "1000-1002"
    """Held-out workload seeds for the final evaluation (empty: skip)."""

    def __post_init__(self) -> None:
        check_vec_options(self.n_envs, self.vec)  # before any run folder or process exists


@dataclass
class PPOArgs(OnPolicyArgs):
    """Arguments of the PPO / MaskablePPO recipe (``hetgym train --algo ppo|maskable-ppo``).

    The defaults (50,000 steps on ``HetCluster-v1``) train from scratch; ``docs/agents.md`` gives a larger
    configuration. Training from scratch has no teacher: ``reference`` is the expert the environment's
    round length is taken from and the agent is measured against.
    """

    choice: ClassVar[str] = "ppo"

    reference: str | None = "dancer"
    """The reference policy (``NAME`` or ``NAME:KEY=VALUE,...``): its round length sets the environment's
    (from scratch) and the DSR gap is measured to it; a fine-tuning run's teacher is its clone's."""
    algo: str = "maskable-ppo"
    """``maskable-ppo`` (masked actions) or ``ppo``."""
    init: str | None = None
    """A saved BC/DAgger agent to fine-tune (run folder or its ``.pt`` weights); none: train from scratch."""
    trust_pickle: bool = False
    """Let ``init`` be an SB3 ``.zip`` archive: it is unpickled, which runs any code the file carries (only
    for files you made or trust; docs/security.md)."""
    arch: str = "slot"
    """Policy network when training from scratch (``slot``, ``slot-flat``, ``set`` or ``mlp``; see BCArgs.arch)."""
    hidden: int = 128
    """Width of the network (from scratch)."""
    attention_layers: int = 0
    """Self-attention layers across slots (from scratch)."""
    time_discount: bool = False
    """Discount by simulated time, ``gamma ** (dt / time_scale_s)``: zero-time steps are not discounted, so
    padding an epoch with edits earns nothing (a semi-MDP, ``agents/smdp.py``)."""
    clip_range: float | None = None
    """PPO clip range (default: 0.1 when fine-tuning, 0.2 from scratch)."""
    vf_coef: float = 0.5
    """Value loss weight."""
    target_kl: float | None = 0.05
    """Stop an update's epochs early past this KL divergence (None: never)."""
    critic_warmup_steps: int = 0
    """Fine-tuning: train only the critic (actor frozen) for this many steps first, so the clone's critic fits
    its own returns before its advantages move the policy (0: none)."""
    max_steps: int = 200_000
    """Step limit of an evaluation episode."""


@dataclass
class EventPPOArgs(OnPolicyArgs):
    """MaskablePPO from scratch on the event-driven ids (``hetgym train --algo events-ppo``,
    :mod:`agents.event_recipes`): an ``MlpPolicy`` on the flat observation, resumable from its checkpoints,
    then compared with ElasticFlow and EDF-with-admission on the held-out seeds."""

    choice: ClassVar[str] = "events-ppo"

    env_id: str = "HetClusterEvents-v0"
    """An event-driven id (``HetClusterEvents-v0``, ``HetClusterEvents-Tiny-v0``, ...)."""
    env: dict[str, Any] = field(default_factory=dict)
    """``gym.make`` overrides, e.g. a cluster and a workload (``flatten=True`` is always added)."""
    total_timesteps: int = 60_000
    n_envs: int = 4
    n_steps: int = 256
    batch_size: int = 128
    n_epochs: int = 10
    learning_rate: float | None = 3e-4
    ent_coef: float | None = 0.01
    checkpoint_every: int = 10_000
    eval_seeds: str = "1000-1019"
    max_train_s: float = 0.0
    """Stop training after this many seconds of wall time (0: no limit); what was learned is saved."""
    resume: bool = False
    """Continue the run folder's latest checkpoint (give its ``--run-name``) up to ``total_timesteps``."""
    eval_only: bool = False
    """Evaluate the run folder's saved model (give its ``--run-name``) without training."""
    skip_eval: bool = False
    """Train and save, without the held-out evaluation."""


@dataclass
class KickstartArgs(EventPPOArgs):
    """Kickstarting (``hetgym train --algo kickstart``, :mod:`agents.kickstart`): clone a teacher, fit the
    critic to its returns, then MaskablePPO pulled towards the clone by an annealed distillation term."""

    choice: ClassVar[str] = "kickstart"

    teacher: str = "force-any"
    """The teacher: ``elasticflow`` (action 0), ``force-any`` (force every job on any GPU type) or any
    registered policy's closest choices, e.g. ``dancer``."""
    teacher_seeds: str = "0-39"
    """Workload seeds of the teacher's episodes (they may not meet ``eval_seeds``)."""
    bc_epochs: int = 30
    """Cloning epochs."""
    bc_lr: float = 1e-3
    """Cloning's Adam learning rate."""
    bc_batch_size: int = 256
    """Minibatch size of the cloning and of the critic's fit."""
    critic_epochs: int = 30
    """Epochs of the critic's fit to the teacher's returns (actor frozen)."""
    critic_lr: float = 1e-3
    """The critic fit's Adam learning rate."""
    distill_start: float = 1.0
    """Weight of ``KL(clone || policy)`` in PPO's loss at the start."""
    distill_steps: int = 30_000
    """Timesteps over which that weight falls linearly to 0."""


@dataclass
class CurriculumArgs(EventPPOArgs):
    """MaskablePPO through a curriculum over episode length and load (``hetgym train --algo curriculum``):
    short, light workloads first, the flagship scenario last; ``total_timesteps`` is the stages' sum."""

    choice: ClassVar[str] = "curriculum"

    stages: str = "30:6:10000,60:9:10000,120:12:20000"
    """``JOBS:RATE:STEPS,...``: each stage trains ``STEPS`` timesteps on workloads of ``JOBS`` jobs arriving
    at ``RATE`` per hour."""


#: The argument classes of every ``hetgym train --algo`` choice (``maskable-ppo`` shares ``ppo``'s).
RECIPE_ARGS: tuple[type[RunArgs], ...] = (
    BCArgs,
    DAggerArgs,
    PPOArgs,
    ExItArgs,
    EventPPOArgs,
    KickstartArgs,
    CurriculumArgs,
)


__all__ = [
    "LR_SCHEDULES",
    "RECIPE_ARGS",
    "SMOKE_BUDGETS",
    "SMOKE_OUT_DIR",
    "VEC_KINDS",
    "AgentError",
    "BCArgs",
    "CurriculumArgs",
    "DAggerArgs",
    "EventPPOArgs",
    "ExItArgs",
    "ImitationArgs",
    "KickstartArgs",
    "OnPolicyArgs",
    "PPOArgs",
    "RoundArgs",
    "RunArgs",
    "check_lr_schedule",
    "check_vec_options",
    "parse_seeds",
    "parse_teacher",
    "smoke_options",
]
