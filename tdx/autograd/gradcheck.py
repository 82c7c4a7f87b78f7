"""``gradcheck`` and ``gradgradcheck``: analytical gradients against central finite differences.

Both run on any executor through tdx ops only: the numerical Jacobian perturbs one element at a
time on the host, the analytical one is ``autograd.grad`` of each output element; second order
differentiates a ``create_graph=True`` gradient. Must never import a framework at module level and
never loosen the caller's tolerances.
"""

from __future__ import annotations

import warnings

from .._errors import TdxRuntimeError, UnsupportedOpError

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(TdxRuntimeError):
    """An analytical gradient differs from the numerical one (torch's ``GradcheckError``)."""


def _tensors(x) -> tuple:
    from .function import _is_tensor

    return (x,) if _is_tensor(x) else tuple(x)


def _outputs(func, inputs) -> list:
    from .function import _is_tensor

    out = func(*inputs)
    return [o for o in _tensors(out) if _is_tensor(o)]


def _host(t):
    import numpy as np

    return np.array(t.detach().numpy(force=True), dtype=np.float64, copy=True)


def _numerical(func, inputs, i, eps):
    """Columns of the Jacobian of every output by input ``i``, from central differences."""
    import numpy as np

    from .._tensor.creation import tensor

    x = inputs[i]
    base = x.detach().numpy(force=True).copy()
    cols = []
    for j in range(base.size):
        vals = []
        for step in (eps, -eps):
            arr = base.copy()
            arr.flat[j] += step
            args = list(inputs)
            args[i] = tensor(arr, device=x.device, dtype=x.dtype, requires_grad=x.requires_grad)
            vals.append([_host(o).ravel() for o in _outputs(func, args)])
        cols.append([(p - m) / (2 * eps) for p, m in zip(*vals)])
    n_out = len(cols[0]) if cols else len(_outputs(func, inputs))
    return [np.stack([c[k] for c in cols], axis=1) if cols else None for k in range(n_out)]


def _analytical(outputs, diff, check_grad_dtypes):
    """Rows of the Jacobian of every output by each differentiable input, by ``autograd.grad``."""
    import numpy as np

    from .._tensor.creation import tensor

    from .gradients import grad

    jac = [[np.zeros((o.numel(), t.numel())) for t in diff] for o in outputs]
    for k, o in enumerate(outputs):
        if not o.requires_grad:
            continue
        for r in range(o.numel()):
            hot = np.zeros(o.numel())
            hot[r] = 1.0
            go = tensor(hot.reshape(tuple(o.shape)), device=o.device, dtype=o.dtype)
            gs = grad(o, diff, go, retain_graph=True, allow_unused=True)
            for i, (g, t) in enumerate(zip(gs, diff)):
                if g is None:
                    continue
                if check_grad_dtypes and g.dtype is not t.dtype:
                    raise GradcheckError(f"Gradient has dtype mismatch: input {i} has dtype {t.dtype} but its "
                                         f"gradient has dtype {g.dtype}")
                jac[k][i][r] = _host(g).ravel()
    return jac


def _fail(raise_exception: bool, message: str) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Check the gradients of ``func`` at ``inputs`` against finite differences, as torch's ``gradcheck``.

    Every element of every input that requires grad is perturbed by ``eps``; an analytical entry
    ``a`` passes when ``|a - n| <= atol + rtol * |n|`` for its numerical value ``n``. ``fast_mode``
    still runs this full check (it is the stricter one). ``check_undefined_grad`` is satisfied by
    construction on tdx's tape (a missing output gradient is a zero tensor or None, as asked).

    Returns:
        True when every entry passes; False on a mismatch when ``raise_exception`` is false.

    Raises:
        GradcheckError: a mismatch (with ``raise_exception``), or a non-reentrant backward.
        UnsupportedOpError: forward-mode or batched checks, or complex inputs, which tdx cannot run.
    """
    if check_forward_ad or check_batched_forward_grad or check_batched_grad:
        raise UnsupportedOpError("gradcheck: check_forward_ad, check_batched_forward_grad and check_batched_grad "
                                 "need forward-mode or vmapped autograd, which tdx does not have")
    if masked:
        raise UnsupportedOpError("gradcheck: masked=True needs sparse tensors, which tdx does not have")
    inputs = _tensors(inputs)
    diff = [t for t in inputs if getattr(t, "requires_grad", False)]
    if not diff:
        raise TdxRuntimeError("gradcheck expects at least one input tensor to require gradient, but none of the "
                              "them have requires_grad=True.")
    for i, t in enumerate(inputs):
        if getattr(t, "requires_grad", False):
            if t.dtype.is_complex:
                raise UnsupportedOpError(f"gradcheck: input {i} is complex; tdx checks real inputs only")
            if t.dtype.itemsize < 8:
                warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or "
                              "complex. This check will likely fail if all the inputs are not of double precision "
                              "floating point or complex.", UserWarning, stacklevel=2)
    if not check_backward_ad:
        return True
    import numpy as np

    outputs = _outputs(func, inputs)
    analytical = _analytical(outputs, diff, check_grad_dtypes)
    again = _analytical(outputs, diff, False)
    for k in range(len(outputs)):
        for i in range(len(diff)):
            if not np.all(np.abs(analytical[k][i] - again[k][i]) <= nondet_tol):
                return _fail(raise_exception, f"Backward is not reentrant, i.e., running backward with same input "
                             f"and grad_output multiple times gives different values, although analytical gradient "
                             f"matches numerical gradient. The tolerance for nondeterminism was {nondet_tol}.")
    for i, t in enumerate(diff):
        idx = next(n for n, x in enumerate(inputs) if x is t)
        numerical = _numerical(func, inputs, idx, eps)
        for k, n in enumerate(numerical):
            a = analytical[k][i]
            if n is None:
                continue
            if not np.all(np.abs(a - n) <= atol + rtol * np.abs(n)):
                return _fail(raise_exception, f"Jacobian mismatch for output {k} with respect to input {idx},\n"
                             f"numerical:{n}\nanalytical:{a}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False, masked=False):
    """Check second derivatives: :func:`gradcheck` of the vector-Jacobian product of ``func``.

    ``grad_outputs`` default to random tensors (seeded, requiring grad) shaped as the outputs.
    ``gen_non_contig_grad_outputs`` is accepted: tdx tensors carry no strides that could change
    the result.

    Returns:
        True when every entry passes; False on a mismatch when ``raise_exception`` is false.

    Raises:
        GradcheckError, UnsupportedOpError: as :func:`gradcheck`.
    """
    import numpy as np

    from .._tensor.creation import tensor

    from .gradients import grad

    if check_fwd_over_rev:
        raise UnsupportedOpError("gradgradcheck: check_fwd_over_rev needs forward-mode autograd, which tdx does "
                                 "not have")
    if not check_rev_over_rev:
        return True
    inputs = _tensors(inputs)
    outputs = [o for o in _outputs(func, inputs) if o.requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(tensor(rng.uniform(-1, 1, tuple(o.shape)), device=o.device, dtype=o.dtype,
                                        requires_grad=True) for o in outputs)
    else:
        grad_outputs = _tensors(grad_outputs)
    n_in = len(inputs)

    def vjp(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = [o for o in _outputs(func, ins) if o.requires_grad]
        diff = [t for t in ins if getattr(t, "requires_grad", False)]
        gs = grad(outs, diff, list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad, fast_mode=fast_mode)
