"""The former module path of HadarE, kept so that imports written against it still work: use :mod:`baselines.hadar`.

HadarE now lives in :mod:`baselines.hadar.hadare`, beside Hadar; this module only re-exports its names.
"""

from __future__ import annotations

from baselines.hadar.hadare import GAVEL_MODEL_BYTES, HadarE, HadarEKnobs, with_model_bytes

__all__ = ["GAVEL_MODEL_BYTES", "HadarE", "HadarEKnobs", "with_model_bytes"]
