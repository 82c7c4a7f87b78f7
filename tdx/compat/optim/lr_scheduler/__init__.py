"""``tdx.optim.lr_scheduler``: torch's learning-rate schedulers for tdx optimizers.

:mod:`.schedules` holds the base class ``LRScheduler`` and the step, multiplicative, linear,
cosine, polynomial, plateau and composed schedules; :mod:`.cycles` the cyclical ones (``CyclicLR``,
``OneCycleLR``, ``CosineAnnealingWarmRestarts``). Each learning-rate sequence is torch's, float for
float. Must never import a framework.
"""

from __future__ import annotations

from .cycles import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from .schedules import *  # noqa: F401,F403 - the schedules and the base class
from .schedules import _LRScheduler  # noqa: F401 - torch's old name of the base class
from .schedules import __all__ as _schedules_all

__all__ = [*_schedules_all, "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR"]
