"""torch's own attention kernels, run for tdx on torch executors.

On the CPU, tdx calls the kernel it chose directly (``aten._scaled_dot_product_flash_attention_for_cpu``
or ``aten._scaled_dot_product_attention_math``): no process-wide torch flag is touched, so a
choice made in one thread cannot change another thread's kernel. Masks are prepared as
``F.scaled_dot_product_attention`` prepares them (bool masks become additive ``0/-inf`` masks,
which gives torch's zeros on fully-masked rows). On CUDA and MPS tdx calls
``F.scaled_dot_product_attention`` itself, directly when torch would pick the same kernel and
otherwise inside torch's ``sdpa_kernel`` (torch's flags are process-wide there), with the mask in the
form the chosen CUDA kernel reads as the math kernel does (:func:`kernel_mask`).

Imported on first use of a torch kernel; it imports torch, never MLX.
"""

from __future__ import annotations

import torch

from ._state import SDPBackend

__all__ = ["run", "direct", "cuda_can_use", "own_choice", "kernel_mask"]

# torch's own bindings of its CPU kernels (the direct ones; ``torch.ops.aten`` adds ~2 us a call)
_flash_cpu = getattr(torch, "_scaled_dot_product_flash_attention_for_cpu", None) or \
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_math = getattr(torch, "_scaled_dot_product_attention_math", None) or torch.ops.aten._scaled_dot_product_attention_math
_FUSED_CUDA = (SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION)  # the kernels :func:`kernel_mask` serves
_CAN_USE = {SDPBackend.FLASH_ATTENTION: "can_use_flash_attention",
            SDPBackend.EFFICIENT_ATTENTION: "can_use_efficient_attention",
            SDPBackend.CUDNN_ATTENTION: "can_use_cudnn_attention"}


def additive(mask, dtype):
    """A bool mask as an additive ``0 / -inf`` mask of ``dtype``; float masks pass through."""
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(mask.logical_not(), float("-inf"))


def kernel_mask(p, backend):
    """``p``'s mask as torch's fused CUDA kernel ``backend`` reads it with the math kernel's meaning.

    torch's own entry point hands its kernels masks they misread or refuse: the cuDNN kernel gets a bool
    mask as a finite ``-65504`` bias (a row that sees no key then attends to every key, where the math kernel
    gives zeros) and reads a float mask of another dtype than the query's as the query's dtype; the
    memory-efficient kernel refuses a float mask of another dtype and one whose last dim is broadcast (stride
    0 after torch expands it). So for these two kernels a bool mask becomes the additive ``0 / -inf`` mask
    (cuDNN), a float mask takes the query's dtype, and a last dim of 1 is written out to the ``Tk`` keys; the
    values the kernel adds are the math kernel's. Other kernels and masks are handed over as they are.
    """
    mask = p.mask
    if mask is None or backend not in _FUSED_CUDA:
        return mask
    if mask.dtype == torch.bool:
        if backend is SDPBackend.CUDNN_ATTENTION:
            mask = additive(mask, p.q.dtype)
    elif mask.dtype != p.q.dtype:
        mask = mask.to(p.q.dtype)
    if mask.shape[-1] == 1 and p.Tk > 1:
        mask = mask.expand(*mask.shape[:-1], p.Tk).contiguous()
    return mask


def run(p, backend):
    """Run torch kernel ``backend`` on canonical params ``p``; the ``(B, Hq, Tq, Ev)`` result."""
    if p.ex.device.type == "cpu":
        mask = additive(p.mask, p.q.dtype)
        if backend is SDPBackend.FLASH_ATTENTION:
            return _flash_cpu(p.q, p.k, p.v, 0.0, p.is_causal, attn_mask=mask, scale=p.scale)[0]
        return _math(p.q, p.k, p.v, mask, p.dropout_p, p.is_causal, None, scale=p.scale,
                     enable_gqa=p.groups > 1)[0]
    kw = dict(attn_mask=kernel_mask(p, backend), dropout_p=p.dropout_p, is_causal=p.is_causal, scale=p.scale,
              enable_gqa=p.groups > 1)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    if int(torch._fused_sdp_choice(p.q, p.k, p.v, **kw)) == int(backend):
        return sdpa(p.q, p.k, p.v, **kw)
    from torch.nn.attention import SDPBackend as TorchBackend, sdpa_kernel

    with sdpa_kernel([getattr(TorchBackend, backend.name)]):
        return sdpa(p.q, p.k, p.v, **kw)


def direct(p, backend):
    """``run`` of ``backend`` as a function of the three input natives alone, for calls planned as ``p`` (the
    same executor, flags and shapes), where that is one kernel call: the flash kernel on the CPU without a
    mask or dropout. None otherwise."""
    if backend is not SDPBackend.FLASH_ATTENTION or p.ex.device.type != "cpu" or p.mask is not None or p.dropout_p:
        return None
    is_causal, scale = p.is_causal, p.scale

    def flash(q, k, v):
        return _flash_cpu(q, k, v, 0.0, is_causal, attn_mask=None, scale=scale)[0]

    return flash


def own_choice(p):
    """The kernel torch's own ``F.scaled_dot_product_attention`` runs on canonical params ``p`` (its flags
    in force): with dropout, the only one drawing torch's mask."""
    try:
        choice = torch._fused_sdp_choice(p.q, p.k, p.v, attn_mask=p.mask, dropout_p=p.dropout_p,
                                         is_causal=p.is_causal, scale=p.scale, enable_gqa=p.groups > 1)
    except (RuntimeError, NotImplementedError):  # a device without torch's chooser runs the math kernel
        return SDPBackend.MATH
    return SDPBackend(int(choice))


def cuda_can_use(backend, p) -> tuple:
    """(torch's ``can_use_*`` verdict, a reason when refused) for a CUDA kernel on canonical params ``p``.

    Asked with ``debug=False``: torch's debug answers go to the process's stderr through c10's logger (not to
    Python's warnings), so asking for them would print lines a native torch call never prints. The reason
    names the check and how to see torch's own account."""
    name = _CAN_USE[backend]
    fn = getattr(torch.backends.cuda, name, None)
    if fn is None:
        return False, f"this torch build has no {name}"
    params = torch.backends.cuda.SDPAParams(p.q, p.k, p.v, p.mask, p.dropout_p, p.is_causal, p.groups > 1)
    if fn(params, False):
        return True, ""
    return False, (f"torch's {name} refuses these inputs on {p.q.device} (dtype {p.q.dtype}, head dim "
                   f"{p.q.shape[-1]}; torch.backends.cuda.{name}(params, debug=True) prints torch's reasons)")
