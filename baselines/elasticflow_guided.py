"""The former module path of the guided ElasticFlow, kept so that imports written against it still work: use
:mod:`baselines.elasticflow` (the variant lives in :mod:`baselines.elasticflow.guided`).
"""

from __future__ import annotations

from baselines.elasticflow.guided import GPU_CAPS, GuidedElasticFlow

__all__ = ["GPU_CAPS", "GuidedElasticFlow"]
