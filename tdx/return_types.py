"""Named tuples returned by ops with several outputs, as ``torch.return_types``."""

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001 - torch's name
min = namedtuple("min", ["values", "indices"])  # noqa: A001 - torch's name
sort = namedtuple("sort", ["values", "indices"])
topk = namedtuple("topk", ["values", "indices"])
cummax = namedtuple("cummax", ["values", "indices"])
cummin = namedtuple("cummin", ["values", "indices"])
aminmax = namedtuple("aminmax", ["min", "max"])
median = namedtuple("median", ["values", "indices"])
nanmedian = namedtuple("nanmedian", ["values", "indices"])
kthvalue = namedtuple("kthvalue", ["values", "indices"])
mode = namedtuple("mode", ["values", "indices"])
histogram = namedtuple("histogram", ["hist", "bin_edges"])
frexp = namedtuple("frexp", ["mantissa", "exponent"])
