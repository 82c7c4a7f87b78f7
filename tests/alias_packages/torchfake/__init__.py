"""A stand-in third-party package whose name starts with ``torch`` (as torchvision's, torchmetrics'
do): under tdx's torch alias it must stay itself, while its own ``import torch`` gets what the
program's gets."""

import torch

from .layers import double

NAME = "torchfake"
TORCH = torch  # what this package's own ``import torch`` gave
