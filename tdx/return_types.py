"""Named tuples returned by ops with several outputs, as ``torch.return_types``."""

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001 - torch's name
min = namedtuple("min", ["values", "indices"])  # noqa: A001 - torch's name
