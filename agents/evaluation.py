"""Scoring learned agents and experts on the same held-out workloads: one table, one figure.

* :func:`evaluate_model` runs a saved or in-memory SB3 model in its environment, one episode per
  workload seed (``reset(options={"workload_seed": s})``), deterministically (the most likely valid
  action; masks applied when the policy takes them), and returns one row of the episode's final metrics
  per seed.
* :func:`evaluate_expert` runs a registered policy on the raw simulator on the very workloads the
  environment draws for those seeds (its cluster, recipe or trace, and simulator settings). By default
  each expert runs at its own round length, as ``hetgym compare`` runs it; the teacher whose round the
  agent's environment took gets the same run it would have inside the environment.
* :func:`compare_on_seeds` puts both together in an :class:`Evaluation` (per-seed rows, an aggregate
  with means, standard deviations and 95% confidence intervals of the means, each policy's DSR gap to
  the teacher on the same seeds), which renders a table (markdown or rich) and a figure (DSR and
  average JCT per policy, seeds as dots).

The confidence interval of a mean over n seeds is Student's t interval, mean ± t(0.975, n - 1) · s / √n
with s the sample standard deviation (n - 1 in its denominator; the ``_std`` columns keep the population
one, n, as before). It treats the seeds' workloads as independent draws and the per-seed figures as
roughly normal; with the usual 5 to 20 seeds it is wide, which is the point: two policies whose
intervals overlap are not told apart by that many workloads. One seed gives no interval (NaN). The
interval is clipped to the range the metric can take (DSR in [0, 1], JCT >= 0), which keeps its
coverage: the true mean lies in that range.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agents.args import parse_teacher
from agents.common import AgentError, atomic_write, make_env, simulated

#: Metrics whose mean gets a confidence interval (columns ``<key>_ci95_low`` / ``<key>_ci95_high``), with
#: the range their mean can take (the interval is clipped to it).
CI_METRICS: dict[str, tuple[float, float]] = {"dsr": (0.0, 1.0), "jct_mean_s": (0.0, math.inf)}
#: Confidence level of those intervals.
CI_LEVEL = 0.95
#: What the DSR and JCT cells of the tables hold.
CELL_NOTE = "DSR and avg JCT: mean ± sd [95% confidence interval of the mean, Student's t] over seeds"

#: Columns of the evaluation table: (key, label, scale, format).
TABLE_METRICS: tuple[tuple[str, str, float, str], ...] = (
    ("dsr", "DSR", 1.0, "{:.3f}"),
    ("jct_mean_s", "avg JCT (h)", 1 / 3600, "{:.2f}"),
    ("utilisation", "util", 1.0, "{:.3f}"),
    ("makespan_s", "makespan (h)", 1 / 3600, "{:.1f}"),
    ("num_reconfigs", "reconfigs", 1.0, "{:.0f}"),
)


def mean_ci(
    values: Sequence[float] | np.ndarray,
    level: float = CI_LEVEL,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> tuple[float, float]:
    """Student's t confidence interval of the mean of ``values`` (NaNs dropped); ``(nan, nan)`` below 2 values.

    Args:
        values: Per-seed figures.
        level: Confidence level (0.95: the 95% interval).
        bounds: The range the mean can take; the interval is clipped to it.
    """
    from scipy import stats

    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return math.nan, math.nan
    mean = float(x.mean())
    half = float(stats.t.ppf(0.5 + level / 2, df=len(x) - 1)) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return max(bounds[0], mean - half), min(bounds[1], mean + half)


def metric_cell(row: pd.Series, key: str, scale: float, fmt: str, num_seeds: int) -> str:
    """A table cell: the mean, with ``± sd [95% CI]`` over seeds for :data:`CI_METRICS` when there are several."""
    v = float(row.get(key, math.nan))
    if not math.isfinite(v):
        return "-"
    cell = fmt.format(v * scale)
    if key in CI_METRICS and num_seeds > 1:
        sd = float(row.get(f"{key}_std", math.nan))
        if math.isfinite(sd):
            cell += f" ± {fmt.format(sd * scale)}"
        low, high = float(row.get(f"{key}_ci95_low", math.nan)), float(row.get(f"{key}_ci95_high", math.nan))
        if math.isfinite(low) and math.isfinite(high):
            cell += f" [{fmt.format(low * scale)}, {fmt.format(high * scale)}]"
    return cell


def _env_config(env_id: str, env_kwargs: dict[str, Any]) -> Any:
    env = make_env(env_id, env_kwargs)
    try:
        return simulated(env).config
    finally:
        env.close()


def evaluate_model(
    model: Any,
    env_id: str,
    env_kwargs: dict[str, Any],
    seeds: Sequence[int],
    *,
    deterministic: bool = True,
    max_steps: int | None = None,
    on_step: Callable[[], None] | None = None,
    on_episode: Callable[[int, dict[str, float]], None] | None = None,
) -> pd.DataFrame:
    """One episode of ``model`` per workload seed; one row of final metrics per seed.

    Extra columns: ``steps`` (agent actions), ``invalid_actions`` (masked-out actions the environment
    ignored; only an unmasked policy takes them), ``truncated_by_eval`` (the episode was cut at
    ``max_steps``; its metrics are then the simulator's at that point), ``modal_action_share`` (the share of
    the episode's actions that are its most frequent one) and ``action_counts`` (each action taken, as
    JSON ``{action: count}``, so shares can be pooled over seeds: :func:`pooled_modal_share`).
    """
    from agents.demos import model_learner

    act = model_learner(model, deterministic=deterministic)
    env = make_env(env_id, env_kwargs)
    rows = []
    try:
        for seed in seeds:
            obs, info = env.reset(options={"workload_seed": int(seed)})
            steps = invalid = 0
            cut = False
            counts: dict[str, int] = {}
            while True:
                action = act(obs, np.asarray(info["action_mask"], dtype=bool))
                key = str(action) if np.ndim(action) == 0 else ",".join(str(int(a)) for a in np.ravel(action))
                counts[key] = counts.get(key, 0) + 1
                obs, _, term, trunc, info = env.step(action)
                steps += 1
                invalid += int(bool(info.get("invalid_action", False)))
                if on_step is not None:
                    on_step()
                if term or trunc:
                    metrics = dict(info["metrics"])
                    break
                if max_steps is not None and steps >= max_steps:
                    metrics = dict(simulated(env).result().metrics)
                    cut = True
                    break
            row: dict[str, Any] = {"seed": int(seed), **{k: float(v) for k, v in metrics.items()}}
            row.update(steps=steps, invalid_actions=invalid, truncated_by_eval=cut)
            row["modal_action_share"] = max(counts.values()) / steps if steps else math.nan
            row["action_counts"] = json.dumps(counts, sort_keys=True)
            rows.append(row)
            if on_episode is not None:
                on_episode(int(seed), row)
    finally:
        env.close()
    return pd.DataFrame(rows)


def pooled_modal_share(action_counts: Sequence[str]) -> float:
    """The share of all actions over several episodes (their ``action_counts`` JSON) that are the most
    frequent one overall (NaN when there are none)."""
    total: dict[str, int] = {}
    for text in action_counts:
        for key, count in json.loads(text).items():
            total[key] = total.get(key, 0) + int(count)
    steps = sum(total.values())
    return max(total.values()) / steps if steps else math.nan


def evaluate_expert(
    policy: str,
    env_id: str,
    env_kwargs: dict[str, Any],
    seeds: Sequence[int],
    *,
    own_round: bool = True,
    policy_kwargs: dict[str, Any] | None = None,
    on_episode: Callable[[int, dict[str, float]], None] | None = None,
) -> pd.DataFrame:
    """A registered policy on the raw simulator, on the workloads the environment draws for ``seeds``.

    Args:
        policy: Registered policy name, possibly with knobs (``dancer:memory=observed``, see
            :func:`~agents.args.parse_teacher`).
        env_id: The agent's environment id.
        env_kwargs: Its overrides (cluster, workload, trace, simulator settings).
        seeds: Workload seeds.
        own_round: Run at the policy's own round length (as ``hetgym compare`` does) rather than the
            environment's.
        policy_kwargs: More knobs (over those of the spec).
        on_episode: Called after each run with the seed and its row.
    """
    from hetgym.sim.engine import Simulator
    from hetgym.sim.policy import make_policy
    from hetgym.sim.throughput import ThroughputModel

    name, knobs = parse_teacher(policy)
    knobs.update(policy_kwargs or {})
    config = _env_config(env_id, env_kwargs)
    sim_config = dataclasses.replace(config.sim, round_s=None) if own_round else config.sim
    cluster = config.cluster_spec()
    throughput = ThroughputModel.default()
    rows = []
    for seed in seeds:
        jobs = config.draw_jobs(int(seed))
        sim = Simulator(cluster, jobs, config=sim_config, throughput=throughput)
        result = sim.run(make_policy(name, **knobs))
        metrics = {k: float(v) for k, v in result.metrics.items()}
        metrics["num_decisions"] = float(result.num_epochs)
        row = {"seed": int(seed), **metrics}
        rows.append(row)
        if on_episode is not None:
            on_episode(int(seed), row)
    return pd.DataFrame(rows)


@dataclass
class Evaluation:
    """Per-seed results of several agents and experts on the same seeds.

    Attributes:
        runs: One row per (policy, seed): ``policy``, ``kind`` (``agent`` or ``expert``), ``seed`` and the
            metrics.
        teacher: The name of the policy the gaps are measured against, or ``None``.
        seeds: The seeds.
        title: A caption for the table and the figure.
        role: What that policy is to the agents, as the figure's legend names it: ``teacher`` (they learned
            from it) or ``reference`` (they are only measured against it: PPO from scratch has no teacher).
    """

    runs: pd.DataFrame
    teacher: str | None
    seeds: list[int]
    title: str = ""
    role: str = "teacher"

    def aggregate(self) -> pd.DataFrame:
        """Per policy over seeds: the mean, the standard deviation (``_std``, population), the 95% t interval
        of the mean of DSR and average JCT (``_ci95_low``, ``_ci95_high``), ``num_seeds``, and the gap
        to the teacher."""
        if self.runs.empty:
            return pd.DataFrame()
        order = list(dict.fromkeys(self.runs["policy"]))
        g = self.runs.drop(columns=["seed", "kind"]).groupby("policy", sort=False)
        out = g.mean(numeric_only=True).join(g.std(numeric_only=True, ddof=0).add_suffix("_std"))
        for key, limits in CI_METRICS.items():
            if key in self.runs.columns:
                ci = {p: mean_ci(vals.to_numpy(dtype=float), bounds=limits) for p, vals in g[key]}
                out[f"{key}_ci95_low"] = [ci[p][0] for p in out.index]
                out[f"{key}_ci95_high"] = [ci[p][1] for p in out.index]
        out["num_seeds"] = g.size()
        kinds = self.runs.groupby("policy", sort=False)["kind"].first()
        out.insert(0, "kind", kinds)
        if self.teacher is not None and self.teacher in set(self.runs["policy"]):
            ref = self.runs[self.runs["policy"] == self.teacher].set_index("seed")
            for policy in out.index:
                mine = self.runs[self.runs["policy"] == policy].set_index("seed")
                common = mine.index.intersection(ref.index)
                dsr_gap = (mine.loc[common, "dsr"] - ref.loc[common, "dsr"]).to_numpy(dtype=float)
                jct_gap = (mine.loc[common, "jct_mean_s"] - ref.loc[common, "jct_mean_s"]).to_numpy(dtype=float)
                out.loc[policy, "dsr_gap"] = float(np.mean(dsr_gap)) if len(common) else math.nan
                out.loc[policy, "dsr_wins"] = float(np.sum(dsr_gap > 1e-9)) if len(common) else math.nan
                out.loc[policy, "dsr_losses"] = float(np.sum(dsr_gap < -1e-9)) if len(common) else math.nan
                out.loc[policy, "jct_gap_s"] = float(np.mean(jct_gap)) if len(common) else math.nan
        return out.reindex(order)

    def markdown(self) -> str:
        """The aggregate as a markdown table (mean ± sd [95% CI of the mean] over seeds; gap to the teacher or
        reference)."""
        agg = self.aggregate()
        head = ["policy", "kind", *[label for _, label, _, _ in TABLE_METRICS]]
        with_gap = "dsr_gap" in agg.columns
        if with_gap:
            head += [f"DSR − {self.teacher}", "seeds better / worse"]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for policy, row in agg.iterrows():
            cells = [f"`{policy}`", str(row["kind"])]
            for key, _, scale, fmt in TABLE_METRICS:
                cells.append(metric_cell(row, key, scale, fmt, len(self.seeds)))
            if with_gap:
                gap = row.get("dsr_gap", math.nan)
                cells.append("-" if not math.isfinite(float(gap)) else f"{float(gap):+.3f}")
                wins, losses = row.get("dsr_wins", math.nan), row.get("dsr_losses", math.nan)
                cells.append("-" if not math.isfinite(float(wins)) else f"{int(wins)} / {int(losses)}")
            lines.append("| " + " | ".join(cells) + " |")
        if len(self.seeds) > 1:
            lines += ["", f"{CELL_NOTE} ({len(self.seeds)} seeds)."]
        return "\n".join(lines) + "\n"

    def figure(self, path: str | Path) -> Path:
        """Write :meth:`build_figure` to ``path``."""
        import matplotlib.pyplot as plt

        fig = self.build_figure()
        out = Path(path)
        atomic_write(
            out, lambda p: fig.savefig(p, dpi=110, format=out.suffix.lstrip(".") or "png", bbox_inches="tight")
        )
        plt.close(fig)
        return out

    def build_figure(self) -> Any:
        """Bar charts of DSR and average JCT per policy (mean over seeds, each seed a dot), with a legend of
        the bar colours (expert, learned agent, and the teacher or reference the gaps are measured against)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        agg = self.aggregate()
        policies = list(agg.index)
        colours = ["tab:orange" if agg.loc[p, "kind"] == "agent" else "tab:blue" for p in policies]
        if self.teacher in policies:
            colours[policies.index(self.teacher)] = "tab:green"
        fig, axes = plt.subplots(1, 2, figsize=(max(8.0, 0.55 * len(policies) + 4), 4.2))
        for ax, (key, label, scale) in zip(
            axes,
            (("dsr", "deadline satisfactory ratio", 1.0), ("jct_mean_s", "average JCT (h)", 1 / 3600)),
            strict=True,
        ):
            x = np.arange(len(policies))
            ax.bar(x, agg[key].to_numpy(dtype=float) * scale, color=colours, alpha=0.8)
            for i, p in enumerate(policies):
                vals = self.runs.loc[self.runs["policy"] == p, key].to_numpy(dtype=float) * scale
                ax.scatter(np.full(len(vals), i), vals, s=10, color="black", zorder=3)
            ax.set_xticks(x, policies, rotation=60, ha="right", fontsize=8)
            ax.set_ylabel(label)
            ax.grid(axis="y", alpha=0.3)
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        handles: list[Any] = [Patch(color="tab:blue", alpha=0.8, label="expert policy")]
        if "tab:orange" in colours:
            handles.append(Patch(color="tab:orange", alpha=0.8, label="learned agent"))
        if "tab:green" in colours:
            handles.append(Patch(color="tab:green", alpha=0.8, label=f"{self.role} ({self.teacher})"))
        handles.append(Line2D([], [], marker="o", linestyle="", color="black", markersize=4, label="one seed"))
        axes[1].legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        fig.suptitle(self.title or f"held-out seeds {self.seeds}", fontsize=10)
        fig.tight_layout()
        return fig

    def save(self, folder: str | Path, stem: str = "evaluation", *, plots: bool = True) -> list[Path]:
        """``<stem>_runs.csv``, ``<stem>.csv`` (aggregate), ``<stem>.md`` and (with ``plots``) ``<stem>.png``."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        written = [
            atomic_write(out / f"{stem}_runs.csv", lambda p: self.runs.to_csv(p, index=False)),
            atomic_write(out / f"{stem}.csv", lambda p: self.aggregate().to_csv(p)),
            atomic_write(out / f"{stem}.md", lambda p: p.write_text(self.markdown())),
        ]
        if plots:
            written.append(self.figure(out / f"{stem}.png"))
        return written


def compare_on_seeds(
    agents: dict[str, tuple[Any, str, dict[str, Any]]],
    experts: Sequence[str],
    seeds: Sequence[int],
    *,
    teacher: str | None,
    reference_env: tuple[str, dict[str, Any]] | None = None,
    max_steps: int | None = None,
    on_step: Callable[[], None] | None = None,
    on_run: Callable[[str, int], None] | None = None,
    title: str = "",
    role: str = "teacher",
) -> Evaluation:
    """Evaluate learned agents and experts on the same workload seeds.

    Args:
        agents: ``{label: (model, env_id, env_kwargs)}``.
        experts: Registered policy names (run on the raw simulator; see :func:`evaluate_expert`).
        seeds: Workload seeds.
        teacher: The policy the gaps are measured against.
        reference_env: ``(env_id, env_kwargs)`` whose workloads the experts run on (default: the
            first agent's).
        max_steps: Per-episode step limit of the agents.
        on_step: Called after every agent step.
        on_run: Called after every episode with (label, seed).
        title: Caption.
        role: ``teacher`` or ``reference``: what ``teacher`` is to the agents (:attr:`Evaluation.role`).
    """
    if not agents and reference_env is None:
        raise AgentError("nothing to evaluate: give a model or a reference environment for the experts")
    if reference_env is None:
        _, env_id, env_kwargs = next(iter(agents.values()))
        reference_env = (env_id, env_kwargs)

    def notify(name: str) -> Callable[[int, dict[str, float]], None] | None:
        if on_run is None:
            return None
        report = on_run
        return lambda seed, _row: report(name, seed)

    frames = []
    for label, (model, env_id, env_kwargs) in agents.items():
        df = evaluate_model(
            model,
            env_id,
            env_kwargs,
            seeds,
            max_steps=max_steps,
            on_step=on_step,
            on_episode=notify(label),
        )
        frames.append(df.assign(policy=label, kind="agent"))
    for name in experts:
        df = evaluate_expert(
            name,
            *reference_env,
            seeds,
            on_episode=notify(name),
        )
        frames.append(df.assign(policy=name, kind="expert"))
    runs = pd.concat(frames, ignore_index=True)
    front = ["policy", "kind", "seed"]
    runs = runs[front + [c for c in runs.columns if c not in front]]
    return Evaluation(runs, teacher, [int(s) for s in seeds], title, role)


__all__ = [
    "CELL_NOTE",
    "CI_LEVEL",
    "CI_METRICS",
    "TABLE_METRICS",
    "Evaluation",
    "compare_on_seeds",
    "evaluate_expert",
    "evaluate_model",
    "mean_ci",
    "metric_cell",
    "pooled_modal_share",
]
