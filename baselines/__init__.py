"""Expert and classic scheduling policies for the hetgym simulator.

Importing this package imports every module in it, which registers each policy with
:func:`hetgym.sim.make_policy`; list them with ``hetgym policies``. One module per paper or family, and
one package per paper written in several files, its modules named after the paper's parts
(``baselines.dancer``: ``policy``, ``planning``, ``dp``, ``reservations``):

* :mod:`baselines.dancer`, :mod:`baselines.hadar` (Hadar and HadarE), :mod:`baselines.elasticflow` (with
  its heterogeneity-agnostic and guided variants), :mod:`baselines.gavel`, :mod:`baselines.asrpt`,
  :mod:`baselines.jps`: the papers' policies, each package's ``__init__`` naming its parts;
* :mod:`baselines.fifo`: FIFO (strict, backfill, heterogeneity-aware);
* :mod:`baselines.srtf`: preemptive shortest remaining time first;
* :mod:`baselines.edf`: earliest deadline first, with and without admission control;
* :mod:`baselines.tiresias`: Tiresias' discretised 2D-LAS;
* :mod:`baselines.yarn_cs`: YARN's capacity scheduler;
* :mod:`baselines.gandiva`: Gandiva-style time slicing and grow-shrink;
* :mod:`baselines.chronus`, :mod:`baselines.hydra`, :mod:`baselines.elasticflow.agnostic`: the deadline
  baselines of the papers' comparisons (Chronus, Hydra, heterogeneity-agnostic ElasticFlow).
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
