"""A-SRPT's iteration predictors: a random forest over job features and recurrences, an oracle, a noisy oracle.

Used by :class:`baselines.asrpt.ASRPT` and :class:`baselines.asrpt.PredictedSRTF` (see :mod:`baselines.asrpt`
for the paper and what is reconstructed), which re-exports these names.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hetgym.sim.job import JobSpec

if TYPE_CHECKING:  # scikit-learn is imported on the first fit: it takes about a second to import
    from sklearn.ensemble import RandomForestRegressor

# ============================================================================================
# Iteration predictors


class IterationPredictor(ABC):
    """Predicts a job's total iterations from what is known at submission; learns from completions."""

    name: str = "predictor"

    def reset(self, seed: int = 0) -> None:  # noqa: B027 - optional hook
        """Forget everything learned online (warm-up history is re-applied by :meth:`fit`)."""

    @abstractmethod
    def predict(self, spec: JobSpec) -> float:
        """Predicted total iterations of ``spec`` (must not read ``spec.total_iters`` unless an oracle)."""

    def predict_many(self, specs: Sequence[JobSpec]) -> list[float]:
        """Predictions for several jobs (one model call where the predictor supports it)."""
        return [self.predict(s) for s in specs]

    def observe(self, spec: JobSpec, iters: float) -> bool:
        """Learn that ``spec`` ran ``iters`` iterations; return whether predictions may have changed."""
        return False

    def fit(self, history: Iterable[JobSpec]) -> None:  # noqa: B027 - optional hook
        """Warm up on past jobs whose ``total_iters`` are known (in submission order)."""


class OraclePredictor(IterationPredictor):
    """The true iteration count (SRPT with perfect knowledge: the upper bound)."""

    name = "oracle"

    def predict(self, spec: JobSpec) -> float:
        return float(spec.total_iters)


class NoisyPredictor(IterationPredictor):
    """The true count times ``exp(sigma * z)``, ``z ~ N(0, 1)`` drawn once per job (seeded by job id)."""

    name = "noisy"

    def __init__(self, sigma: float = 0.3, seed: int = 0) -> None:
        if not sigma >= 0:
            raise ValueError(f"noise sigma={sigma}; it must be >= 0")
        self.sigma = float(sigma)
        self.seed = int(seed)

    def reset(self, seed: int = 0) -> None:
        self.seed = int(seed)

    def predict(self, spec: JobSpec) -> float:
        z = np.random.default_rng([self.seed, spec.job_id]).standard_normal()
        return float(spec.total_iters * math.exp(self.sigma * z))


@dataclass
class _History:
    count: int = 0
    sum_log: float = 0.0
    last_log: float = math.nan

    def add(self, log_iters: float) -> None:
        self.count += 1
        self.sum_log += log_iters
        self.last_log = log_iters

    def stats(self) -> tuple[float, float, float]:
        if self.count == 0:
            return (0.0, math.nan, math.nan)
        return (float(self.count), self.sum_log / self.count, self.last_log)


_STATIC_FIELDS = ("job_type", "user", "log_batch", "num_gpus", "dp", "pp", "tp", "log_model_bytes")
_HISTORY_FIELDS = ("tpl_count", "tpl_mean", "tpl_last", "key_count", "key_mean", "key_last")


class RandomForestPredictor(IterationPredictor):
    """Random-forest regression of log iterations for recurring jobs (A-SRPT's predictor).

    Features: job type, user, log batch size, GPUs, (dp, pp, tp), log model bytes, every entry of
    ``spec.features`` (numbers as they are, strings as category codes), and the count, mean and last log
    iterations of earlier completed recurrences of the job's template (``template_id``) and of its
    (user, job type) key. Missing values are NaN (scikit-learn's forests split on them).

    Args:
        n_estimators: Trees (reconstruction; default 100).
        min_samples_leaf: Smallest leaf (reconstruction; default 2).
        refit_every: Refit after this many new completions (reconstruction; default 25).
        min_train: Completions needed before the first fit (reconstruction; default 20).
        unseen: For a job whose template (or, without one, whose (user, type) key) was never seen:
            ``"median"`` (default) predicts the global median of completed jobs, ``"rf"`` asks
            the forest anyway (it then relies on the static features).
        prior_iters: Prediction when nothing at all has completed yet (reconstruction; default 1000).
        max_train: Keep the most recent this many completions for training.
        target: ``"log"`` (default): the forest learns log iterations; ``"residual"``: it learns
            log iterations less a base (the template's mean log iterations, else the (user, type) key's,
            else the global median), which spares the trees from approximating the identity on the
            history features.
        seed: Seed of the forest.
    """

    name = "rf"

    def __init__(
        self,
        n_estimators: int = 100,
        min_samples_leaf: int = 2,
        refit_every: int = 25,
        min_train: int = 20,
        unseen: Literal["median", "rf"] = "median",
        prior_iters: float = 1000.0,
        max_train: int = 5000,
        target: Literal["log", "residual"] = "log",
        seed: int = 0,
    ) -> None:
        if unseen not in ("median", "rf"):
            raise ValueError(f"unseen={unseen!r}; use 'median' or 'rf'")
        if target not in ("log", "residual"):
            raise ValueError(f"target={target!r}; use 'log' or 'residual'")
        if n_estimators < 1 or min_samples_leaf < 1 or refit_every < 1 or min_train < 1 or max_train < 1:
            raise ValueError("n_estimators, min_samples_leaf, refit_every, min_train and max_train must be >= 1")
        if not prior_iters > 0:
            raise ValueError(f"prior_iters={prior_iters}; it must be > 0")
        self.n_estimators = n_estimators
        self.min_samples_leaf = min_samples_leaf
        self.refit_every = refit_every
        self.min_train = min_train
        self.unseen = unseen
        self.prior_iters = float(prior_iters)
        self.max_train = max_train
        self.target = target
        self.seed = seed
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = int(seed)
        self._examples: list[tuple[JobSpec, tuple[float, ...], float]] = []
        self._by_template: dict[str, _History] = {}
        self._by_key: dict[tuple[str | None, str], _History] = {}
        self._model: RandomForestRegressor | None = None
        self._codes: dict[str, dict[str, int]] = {}
        self._feature_keys: tuple[str, ...] = ()
        self._since_fit = 0
        self._base_log = 0.0
        self.num_fits = 0

    # ---------------------------------------------------------------------------------------
    def _history_stats(self, spec: JobSpec) -> tuple[float, ...]:
        tpl = self._by_template.get(spec.template_id) if spec.template_id is not None else None
        key = self._by_key.get((spec.user, spec.job_type))
        return (tpl or _History()).stats() + (key or _History()).stats()

    def _seen(self, spec: JobSpec) -> bool:
        if spec.template_id is not None:
            return spec.template_id in self._by_template
        return (spec.user, spec.job_type) in self._by_key

    def _code(self, field: str, value: Any, grow: bool) -> float:
        if value is None:
            return math.nan
        table = self._codes.setdefault(field, {})
        key = str(value)
        if key not in table:
            if not grow:
                return math.nan
            table[key] = len(table)
        return float(table[key])

    def _row(self, spec: JobSpec, history: tuple[float, ...], grow: bool) -> list[float]:
        dp, pp, tp = spec.parallelism or (spec.num_gpus, 1, 1)
        row = [
            self._code("job_type", spec.job_type, grow),
            self._code("user", spec.user, grow),
            math.log(spec.batch_size),
            float(spec.num_gpus),
            float(dp),
            float(pp),
            float(tp),
            math.log(spec.model_bytes) if spec.model_bytes else math.nan,
        ]
        for key in self._feature_keys:
            value = spec.features.get(key)
            if isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating):
                row.append(float(value))
            else:
                row.append(self._code("feat:" + key, value, grow))
        row.extend(history)
        return row

    def _base(self, history: tuple[float, ...]) -> float:
        """The residual target's base: template mean, else (user, type) mean, else the global median."""
        if self.target == "log":
            return 0.0
        tpl_count, tpl_mean, _, key_count, key_mean, _ = history
        if tpl_count > 0:
            return tpl_mean
        return key_mean if key_count > 0 else self._base_log

    def _refit(self) -> None:
        examples = self._examples[-self.max_train :]
        self._codes = {}
        self._feature_keys = tuple(sorted({k for spec, _, _ in examples for k in spec.features}))
        self._base_log = float(np.median([t for _, _, t in examples]))
        x = np.array([self._row(spec, hist, grow=True) for spec, hist, _ in examples], dtype=float)
        y = np.array([target - self._base(hist) for _, hist, target in examples])
        from sklearn.ensemble import RandomForestRegressor

        model = RandomForestRegressor(
            n_estimators=self.n_estimators,
            min_samples_leaf=self.min_samples_leaf,
            random_state=self.seed,
            n_jobs=1,
        )
        model.fit(x, y)
        self._model = model
        self._since_fit = 0
        self.num_fits += 1

    def _add(self, spec: JobSpec, iters: float) -> None:
        log_iters = math.log(max(iters, 1e-9))
        self._examples.append((spec, self._history_stats(spec), log_iters))
        if len(self._examples) > 2 * self.max_train:
            del self._examples[: -self.max_train]
        if spec.template_id is not None:
            self._by_template.setdefault(spec.template_id, _History()).add(log_iters)
        self._by_key.setdefault((spec.user, spec.job_type), _History()).add(log_iters)
        self._since_fit += 1

    # ---------------------------------------------------------------------------------------
    def fit(self, history: Iterable[JobSpec]) -> None:
        for spec in sorted(history, key=lambda s: (s.submit_s, s.job_id)):
            self._add(spec, spec.total_iters)
        if len(self._examples) >= self.min_train:
            self._refit()

    def observe(self, spec: JobSpec, iters: float) -> bool:
        self._add(spec, iters)
        if len(self._examples) >= self.min_train and (self._model is None or self._since_fit >= self.refit_every):
            self._refit()
            return True
        return self._model is None  # before the first fit the fallbacks change with every completion

    def median_iters(self) -> float:
        """Median of the iterations of the completed jobs seen (``prior_iters`` before any)."""
        if not self._examples:
            return self.prior_iters
        return float(math.exp(np.median([t for _, _, t in self._examples[-self.max_train :]])))

    def _fallback(self, spec: JobSpec) -> float | None:
        """The prediction without the forest, or ``None`` when the forest should answer."""
        seen = self._seen(spec)
        if self._model is not None and (seen or self.unseen == "rf"):
            return None
        if seen:
            count, mean, _, _, key_mean, _ = self._history_stats(spec)
            return float(math.exp(mean if count > 0 else key_mean))
        return self.median_iters()

    def _forest(self, rows: list[list[float]]) -> np.ndarray:
        # The trees' own predict: the same numbers as RandomForestRegressor.predict (the mean over
        # trees, NaN routed as fitted) without its per-call validation and job dispatch.
        assert self._model is not None
        x = np.ascontiguousarray(rows, dtype=np.float32)
        return np.mean([est.tree_.predict(x).reshape(len(rows)) for est in self._model.estimators_], axis=0)

    def predict(self, spec: JobSpec) -> float:
        return self.predict_many([spec])[0]

    def predict_many(self, specs: Sequence[JobSpec]) -> list[float]:
        out: list[float | None] = [self._fallback(s) for s in specs]
        ask = [i for i, v in enumerate(out) if v is None]
        if ask:
            hists = [self._history_stats(specs[i]) for i in ask]
            rows = [self._row(specs[i], h, grow=False) for i, h in zip(ask, hists, strict=True)]
            for i, h, value in zip(ask, hists, self._forest(rows).tolist(), strict=True):
                out[i] = math.exp(value + self._base(h))
        return [float(v) for v in out if v is not None]


PREDICTORS: dict[str, type[IterationPredictor]] = {
    "rf": RandomForestPredictor,
    "oracle": OraclePredictor,
    "noisy": NoisyPredictor,
}


def make_predictor(spec: str | IterationPredictor, **kwargs: Any) -> IterationPredictor:
    """A predictor by name (``rf``, ``oracle``, ``noisy``) with its knobs, or ``spec`` itself."""
    if isinstance(spec, IterationPredictor):
        return spec
    if spec not in PREDICTORS:
        raise ValueError(f"unknown predictor {spec!r}; use one of {list(PREDICTORS)} or an IterationPredictor")
    return PREDICTORS[spec](**kwargs)
