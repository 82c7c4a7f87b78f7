"""``functional_call`` and ``stack_module_state``: a module run with other tensors in place of its
parameters and buffers, and the stacked state of an ensemble of modules, as ``torch.func``'s.

``functional_call`` swaps the given tensors into the module's (and submodules') parameter and
buffer slots for one call and puts the originals back afterwards, whatever the call raises, so
the module is never left half-swapped. It works on every executor and inside every transform
(the swapped-in tensors may be batched or gradient-tracking). Must never import a framework.
"""

from __future__ import annotations

from ..._errors import TdxRuntimeError, TdxTypeError, TdxValueError

__all__ = ["functional_call", "stack_module_state"]


def _merge(parameter_and_buffer_dicts) -> dict:
    if isinstance(parameter_and_buffer_dicts, dict):
        return dict(parameter_and_buffer_dicts)
    if isinstance(parameter_and_buffer_dicts, (list, tuple)):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise TdxValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        merged, seen = {}, {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        dup = [k for k, n in seen.items() if n > 1]
        if dup:
            raise TdxValueError(f"{dup} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        for d in parameter_and_buffer_dicts:
            merged.update(d)
        return merged
    raise TdxValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                        f"{type(parameter_and_buffer_dicts)}")


def _tied_names(module) -> dict:
    """name -> every name of the same tensor (tied weights), for names that share their tensor."""
    groups: dict = {}
    for name, t in [*module.named_parameters(remove_duplicate=False), *module.named_buffers(remove_duplicate=False)]:
        groups.setdefault(id(t), []).append(name)
    return {n: names for names in groups.values() if len(names) > 1 for n in names}


def _with_ties(module, tensors: dict) -> dict:
    out = dict(tensors)
    for name, names in _tied_names(module).items():
        given = [n for n in names if n in tensors]
        if not given:
            continue
        if len({id(tensors[n]) for n in given}) > 1:
            raise TdxValueError(f"functional_call got multiple values for keys {sorted(given)}, which are tied. "
                                "Consider using tie_weights=False")
        out.setdefault(name, tensors[given[0]])
    return out


def _check_strict(module, tensors: dict) -> None:
    names = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
        {n for n, _ in module.named_buffers(remove_duplicate=False)}
    unexpected = sorted(set(tensors) - names)
    missing = sorted(names - set(tensors))
    if unexpected or missing:
        lines = []
        if unexpected:
            lines.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
        if missing:
            lines.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
        raise TdxRuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(lines))


def _slot(module, name: str):
    """``(owner module, attribute, holder dict or None)`` for dotted ``name``."""
    *path, attr = name.split(".")
    owner = module
    for i, part in enumerate(path):
        sub = owner._modules.get(part) if hasattr(owner, "_modules") else None
        if sub is None:
            from ..nn.modules.module import TdxAttributeError

            raise TdxAttributeError(f"{owner._get_name()} has no attribute `{part}`")
        owner = sub
    for holder in (owner._parameters, owner._buffers):
        if attr in holder:
            return owner, attr, holder
    return owner, attr, None


_ABSENT = object()


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call ``module`` with the tensors of ``parameter_and_buffer_dicts`` in place of its own.

    Args:
        module: the module to call.
        parameter_and_buffer_dicts: a dict of dotted name -> tensor, or a list/tuple of such dicts
            (no name in two of them).
        args: the positional arguments (a single non-tuple value is one argument).
        kwargs: the keyword arguments.
        tie_weights: a tensor given for one of several tied names stands for all of them.
        strict: the names must be exactly the module's parameters and buffers.

    Raises:
        TdxValueError: the dicts are not dicts, share a name, or give two tensors to tied names.
        TdxTypeError: a value is not a tensor.
        TdxRuntimeError: ``strict`` and the names differ from the module's.
    """
    from ..._tensor.wrapping import Tensor

    tensors = _merge(parameter_and_buffer_dicts)
    for k, v in tensors.items():
        if not isinstance(v, Tensor):
            raise TdxTypeError(f"{v!r} is not an instance of torch.Tensor (functional_call got it for {k!r})")
    if tie_weights:
        tensors = _with_ties(module, tensors)
    if strict:
        _check_strict(module, tensors)
    slots = [(name, *_slot(module, name)) for name in tensors]
    saved = []
    try:
        for name, owner, attr, holder in slots:
            if holder is not None:
                saved.append((owner, attr, holder, holder[attr]))
                holder[attr] = tensors[name]
            else:
                saved.append((owner, attr, None, owner.__dict__.get(attr, _ABSENT)))
                object.__setattr__(owner, attr, tensors[name])
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for owner, attr, holder, old in reversed(saved):
            if holder is not None:
                holder[attr] = old
            elif old is _ABSENT:
                owner.__dict__.pop(attr, None)
            else:
                object.__setattr__(owner, attr, old)


def stack_module_state(models):
    """``(params, buffers)``: each name's tensors of ``models`` stacked on a new first dimension.

    Stacked parameters are fresh leaves that require grad when the models' do (for an ensemble's
    optimizer); buffers are stacked as they are.

    Raises:
        TdxRuntimeError: no models, models of different classes or training modes, or a parameter
            that requires grad in some models only.
    """
    import tdx

    models = list(models)
    if not models:
        raise TdxRuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise TdxRuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise TdxRuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(name, tensors, leaf: bool):
        out = tdx.stack(tensors)
        if not leaf:
            return out
        flags = {t.requires_grad for t in tensors}
        if len(flags) > 1:
            raise TdxRuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        return out.detach().requires_grad_() if flags.pop() else out

    per_model_p = [dict(m.named_parameters()) for m in models]
    per_model_b = [dict(m.named_buffers()) for m in models]
    params = {k: stacked(k, [p[k] for p in per_model_p], True) for k in per_model_p[0]}
    buffers = {k: stacked(k, [b[k] for b in per_model_b], False) for k in per_model_b[0]}
    return params, buffers
