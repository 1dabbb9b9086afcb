"""A-SRPT (Luo et al., IEEE INFOCOM 2025): prediction-assisted, communication-aware online scheduling.

* :mod:`baselines.asrpt.policy`: the virtual single-machine SRPT, the mapping onto GPU types and
  servers, the policies (A-SRPT and predicted SRTF) and their knobs;
* :mod:`baselines.asrpt.predict`: the iteration predictors (oracle, noisy, random forest).
"""

from __future__ import annotations

from baselines.asrpt.policy import ASRPT, ASRPTKnobs, PredictedSRTF, PredictedSRTFKnobs, VirtualSRPT
from baselines.asrpt.predict import (
    PREDICTORS,
    IterationPredictor,
    NoisyPredictor,
    OraclePredictor,
    RandomForestPredictor,
    make_predictor,
)

__all__ = [
    "ASRPT",
    "PREDICTORS",
    "ASRPTKnobs",
    "IterationPredictor",
    "NoisyPredictor",
    "OraclePredictor",
    "PredictedSRTF",
    "PredictedSRTFKnobs",
    "RandomForestPredictor",
    "VirtualSRPT",
    "make_predictor",
]
