"""Named tuples returned by ops with several outputs, as ``torch.return_types``.

Each class is made the first time it is asked (``return_types.max``), then kept: a program pays the memory of the
ones its ops return. Must never import anything of tdx or a framework.
"""

from collections import namedtuple as _namedtuple

# torch's name -> its fields (torch.linalg's carry the linalg_ prefix)
_FIELDS = {
    "max": ("values", "indices"), "min": ("values", "indices"), "sort": ("values", "indices"),
    "topk": ("values", "indices"), "cummax": ("values", "indices"), "cummin": ("values", "indices"),
    "aminmax": ("min", "max"), "linalg_slogdet": ("sign", "logabsdet"), "slogdet": ("sign", "logabsdet"),
    "linalg_qr": ("Q", "R"), "linalg_svd": ("U", "S", "Vh"), "linalg_eig": ("eigenvalues", "eigenvectors"),
    "linalg_eigh": ("eigenvalues", "eigenvectors"),
    "linalg_lstsq": ("solution", "residuals", "rank", "singular_values"), "linalg_lu": ("P", "L", "U"),
    "linalg_lu_factor": ("LU", "pivots"), "linalg_lu_factor_ex": ("LU", "pivots", "info"),
    "linalg_cholesky_ex": ("L", "info"), "linalg_inv_ex": ("inverse", "info"), "linalg_solve_ex": ("result", "info"),
    "linalg_ldl_factor": ("LD", "pivots"), "linalg_ldl_factor_ex": ("LD", "pivots", "info"),
    "median": ("values", "indices"), "nanmedian": ("values", "indices"), "kthvalue": ("values", "indices"),
    "mode": ("values", "indices"), "histogram": ("hist", "bin_edges"), "frexp": ("mantissa", "exponent"),
    "geqrf": ("a", "tau"), "qr": ("Q", "R"), "svd": ("U", "S", "V"),
    "triangular_solve": ("solution", "cloned_coefficient"), "lu_unpack": ("P", "L", "U")
}


def __getattr__(name: str):
    fields = _FIELDS.get(name)
    if fields is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # setdefault: two threads asking at once get the same class
    return globals().setdefault(name, _namedtuple(name, fields, module=__name__))


def __dir__():
    return sorted(set(globals()) | set(_FIELDS))
