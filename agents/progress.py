"""The recipes' progress: a bar on a terminal, else a line every few seconds (:mod:`hetgym.progress`).

Collecting episodes is counted in workloads (their lengths in steps are not known in advance); cloning
in states, PPO in timesteps.
"""

from __future__ import annotations

from typing import Any

from agents.demos import Demonstrations, collect_demonstrations
from hetgym.progress import ProgressReport


def progress_report(enabled: bool) -> ProgressReport:
    """The recipes' progress (:mod:`hetgym.progress`): a bar on a terminal, else a line every few seconds."""
    from hetgym.cli._common import console

    return ProgressReport(enabled=enabled, console=console)


class EpisodeCounter:
    """A rollout's ``on_step`` callback that advances ``bar`` by one workload whenever an episode ends.

    A rollout calls ``on_step`` with the step count of the running episode, so a count that does not grow
    means the previous episode ended; the last one is counted by :meth:`close`.
    """

    def __init__(self, bar: ProgressReport) -> None:
        self.bar = bar
        self._last = 0

    def __call__(self, steps: int) -> None:
        if steps <= self._last:
            self.bar.advance(1)
        self._last = steps

    def close(self) -> None:
        if self._last:
            self.bar.advance(1)
        self._last = 0


def collect_with_progress(
    bar: ProgressReport,
    env_id: str,
    env_kwargs: dict[str, Any],
    teacher: str,
    seeds: list[int],
    label: str,
    obs_dtype: str = "float32",
) -> Demonstrations:
    """:func:`~agents.demos.collect_demonstrations` with a progress bar over workloads."""
    bar.task(f"{label}: {teacher}'s episodes", len(seeds), unit="workloads")
    counter = EpisodeCounter(bar)
    demos = collect_demonstrations(env_id, env_kwargs, teacher, seeds, on_step=counter, obs_dtype=obs_dtype)
    counter.close()
    return demos


__all__ = ["EpisodeCounter", "collect_with_progress", "progress_report"]
