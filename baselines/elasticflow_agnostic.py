"""The former module path of the heterogeneity-agnostic ElasticFlow, kept so that imports written against it
still work: use :mod:`baselines.elasticflow` (the variant lives in :mod:`baselines.elasticflow.agnostic`).
"""

from __future__ import annotations

from baselines.elasticflow.agnostic import POOL, ElasticFlowAgnostic, ElasticFlowAgnosticKnobs

__all__ = ["POOL", "ElasticFlowAgnostic", "ElasticFlowAgnosticKnobs"]
