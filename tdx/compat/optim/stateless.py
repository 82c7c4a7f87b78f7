"""``tdx.optim.swap_in_optimizer_params_and_state``: run an optimizer on borrowed params and state.

Mirrors torch 2.13's ``torch.optim._stateless``: for the duration of a ``with`` block the live
optimizer's param groups hold the supplied parameter tensors and hyperparameters, and its
``state`` is the supplied ``state_dict()``-shaped state re-keyed by those tensors; everything is
restored on exit. Pure Python over the optimizer's dicts: must never import torch or MLX and
never copy or convert a tensor (in-place updates must reach the caller's tensors).
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any, NamedTuple

from tdx._errors import TdxRuntimeError

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


class _GroupSwap(NamedTuple):
    """One param group's swap: the live group dict, the swap-in group dict, its tensors."""

    live_group: dict
    swapin_group: dict
    swapin_params: list


def _check_state(state: Any) -> dict:
    """``state`` must map packed integer ids to per-parameter dicts."""
    if not isinstance(state, dict):
        raise TdxRuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed "
                              f"parameter ids to per-param state dicts, got {type(state).__name__}.")
    import tdx
    if any(isinstance(k, tdx.Tensor) for k in state):
        raise TdxRuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed "
                              "parameter ids, got tensor keys.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise TdxRuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _check_groups(optimizer, param_groups: Any) -> list:
    """``param_groups`` must be a list as long as the live optimizer's."""
    if not isinstance(param_groups, list):
        raise TdxRuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of "
                              f"param-group dicts, got {type(param_groups).__name__}.")
    if len(optimizer.param_groups) != len(param_groups):
        raise TdxRuntimeError(f"swapin_optim_state has {len(param_groups)} parameter groups, the live "
                              f"optimizer {len(optimizer.param_groups)}.")
    return param_groups


def _check_group(idx: int, group: dict, swapin_group: Any) -> list:
    """Validate one swap-in group against its live group; return its packed parameter ids."""
    if not isinstance(swapin_group, dict):
        raise TdxRuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary, got "
                              f"{type(swapin_group).__name__} for group {idx}.")
    ids = swapin_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise TdxRuntimeError(f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] "
                              f"entries keyed by packed parameter ids, got {ids!r} for group {idx}.")
    if len(group["params"]) != len(ids):
        raise TdxRuntimeError(f"swapin_optim_state param group {idx} has {len(ids)} params, the live "
                              f"optimizer param group {len(group['params'])}.")
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise TdxRuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly "
                              f"match the live optimizer group keys for group {idx}. Keys only in swap-in: "
                              f"{swapin_only}. Keys only in live: {live_only}.")
    return ids


def _prepare(optimizer, swapin_parameters: dict, swapin_optim_state: dict) -> tuple[dict, list[_GroupSwap]]:
    """Validate the swap-in arguments and pair each live group with its tensors, in order."""
    if not optimizer.state:
        raise TdxRuntimeError(f"{_NAME} requires initialized optimizer state (call optimizer.step() first).")
    if not isinstance(swapin_optim_state, dict):
        raise TdxRuntimeError(f"{_NAME} requires an optimizer.state_dict()-style dict, got "
                              f"{type(swapin_optim_state).__name__}.")
    state = _check_state(swapin_optim_state.get("state"))
    groups = _check_groups(optimizer, swapin_optim_state.get("param_groups"))
    flat = list(swapin_parameters.values())
    offset, seen, swaps = 0, set(), []
    for idx, (group, swapin_group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _check_group(idx, group, swapin_group)
        seen.update(ids)
        end = offset + len(ids)
        if end > len(flat):
            raise TdxRuntimeError(f"{_NAME} requires the explicit parameter state to match "
                                  f"optimizer.param_groups ordering: {len(flat)} parameters given, group "
                                  f"{idx} needs parameters {offset}..{end - 1}.")
        swaps.append(_GroupSwap(group, swapin_group, flat[offset:end]))
        offset = end
    extra = [k for k in state if k not in seen]
    if extra:
        raise TdxRuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed "
                              f"parameter ids from param_groups[*]['params']; got extra keys {extra!r}.")
    return state, swaps


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """Temporarily replace an optimizer's parameters and state, restoring them on exit.

    Inside the block every optimizer API (hooks included) sees the swap-in values, so
    ``optimizer.step()`` updates the supplied tensors and the supplied state tensors in place.
    Structural changes to the state (new keys, rebinding a tensor) stay local to the block.

    Args:
        optimizer: The live optimizer; its state must already be initialized.
        swapin_parameters: Name -> tensor, in the order of the optimizer's parameters
            (usually ``model.named_parameters()`` order).
        swapin_optim_state: An ``optimizer.state_dict()``-shaped dict: ``"state"`` keyed by packed
            integer ids and ``"param_groups"`` mirroring ``optimizer.param_groups`` (same keys).

    Yields:
        None.

    Raises:
        TdxRuntimeError: (a RuntimeError, as torch's) when the optimizer has no state yet or the
            swap-in dicts do not match the live optimizer's layout.
    """
    state, swaps = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped: defaultdict = defaultdict(dict)
        for swap in swaps:
            swap.live_group["params"] = swap.swapin_params
            for key, value in swap.swapin_group.items():
                if key != "params":
                    swap.live_group[key] = value
            for param, pid in zip(swap.swapin_params, swap.swapin_group["params"]):
                swapped[param] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
