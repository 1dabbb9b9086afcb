"""ElasticFlow (Gu et al., ASPLOS 2023) on GPU types, and the two variants built on its planner.

* :mod:`baselines.elasticflow.admission`: admission control, the minimum satisfactory share (a job's
  levels, the timeline of reserved GPUs, the plan of each pass);
* :mod:`baselines.elasticflow.knobs`: the knobs of the policy and of its variants;
* :mod:`baselines.elasticflow.policy`: the policy: the leftover GPUs by marginal return,
  the buddy placement, the plans' next change point;
* :mod:`baselines.elasticflow.agnostic`: the published single-type ElasticFlow on a mixed cluster (one
  pool of all GPUs at one reference speed, types chosen blind);
* :mod:`baselines.elasticflow.guided`: ElasticFlow steered per job by a learned policy's priority and
  share cap.
"""

from __future__ import annotations

from baselines.elasticflow.admission import ElasticFlowAdmission, JobLevels, MSSPlan, Timeline, job_levels, mss_plan
from baselines.elasticflow.agnostic import ElasticFlowAgnostic, ElasticFlowAgnosticKnobs
from baselines.elasticflow.guided import GPU_CAPS, GuidedElasticFlow
from baselines.elasticflow.knobs import LEFTOVER_RULES, PLACEMENTS, ElasticFlowKnobs, GuidedElasticFlowKnobs
from baselines.elasticflow.policy import ElasticFlow

__all__ = [
    "GPU_CAPS",
    "LEFTOVER_RULES",
    "PLACEMENTS",
    "ElasticFlow",
    "ElasticFlowAdmission",
    "ElasticFlowAgnostic",
    "ElasticFlowAgnosticKnobs",
    "ElasticFlowKnobs",
    "GuidedElasticFlow",
    "GuidedElasticFlowKnobs",
    "JobLevels",
    "MSSPlan",
    "Timeline",
    "job_levels",
    "mss_plan",
]
