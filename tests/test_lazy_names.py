"""Names offered without importing their modules (``tdx.aliasing.lazy_names``) are the very objects they were.

``tdx.nn``, ``tdx.nn.modules``, ``tdx.nn.functional`` and ``tdx.optim`` import a class's or function's module the
first time the name is asked; ``tdx.return_types`` makes a named tuple when asked; the names ``tdx`` refuses are made
when asked; ``tdx.aliasing.torch_paths`` reads module paths without parsing torch's names. Their tables must match the
modules, every name must resolve to the object its module defines (wrapped by autocast where the policy lists it), and
``import tdx, tdx.nn, tdx.optim`` must leave the lazy modules unimported.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import threading

import pytest

import tdx
from tdx.aliasing import lazy_names, refused, torch_paths
from tdx.compat.amp import autocast_state
from tdx.compat.nn import functional as F, modules


def test_nn_modules_table_matches_the_submodules():
    assert lazy_names.check("tdx.compat.nn.modules", modules._HOMES, modules._WHOLE) == []


def test_functional_table_matches_the_submodules():
    whole = [h for h in F._HOMES if h not in ("._multihead", "._pooling")]
    assert lazy_names.check("tdx.compat.nn", F._HOMES, whole) == []
    pooling = importlib.import_module("tdx.compat.nn._pooling")
    assert set(pooling.__all__) - set(F._HOMES["._pooling"]) == {"gather_windows"}  # a helper F never offered


def test_amp_holds_all_of_autocast_and_offers_its_names_lazily():
    from tdx.compat import amp
    from tdx.compat.amp import autocast_mode, grad_scaler

    assert lazy_names.check("tdx.compat.amp", amp._HOMES) == []
    assert tdx.amp.autocast is autocast_mode.autocast is autocast_state.autocast is tdx.autocast
    assert tdx.amp.GradScaler is grad_scaler.GradScaler and tdx.amp.autocast_state is autocast_state
    assert tdx.is_autocast_enabled is autocast_state.is_autocast_enabled
    assert {"GradScaler", "autocast", "grad_scaler"} <= set(dir(tdx.amp))


def test_optim_offers_every_optimizer_of_its_modules():
    from tdx.compat.optim import adam, adagrad, optimizer

    assert tdx.optim.AdamW is adam.AdamW and tdx.optim.Adagrad is adagrad.Adagrad
    assert tdx.optim.Optimizer is optimizer.Optimizer
    assert tdx.optim.lr_scheduler is importlib.import_module("tdx.compat.optim.lr_scheduler")
    assert {"AdamW", "lr_scheduler", "swa_utils"} <= set(dir(tdx.optim))


def test_names_resolve_to_the_defining_modules_objects():
    from tdx.compat.nn.modules import conv, linear, rnn

    assert tdx.nn.Conv2d is conv.Conv2d is modules.Conv2d
    assert tdx.nn.LSTM is rnn.LSTM and modules.NonDynamicallyQuantizableLinear is linear.NonDynamicallyQuantizableLinear
    assert modules.rnn is rnn and tdx.nn.init is importlib.import_module("tdx.compat.nn.init")
    assert "Conv2d" in dir(tdx.nn) and "Conv2d" in dir(modules)
    with pytest.raises(AttributeError):
        tdx.nn.NoSuchLayer  # noqa: B018


def test_a_lazily_resolved_functional_gets_its_autocast_wrapper():
    conv = importlib.import_module("tdx.compat.nn._conv")
    fn = F.conv2d
    if getattr(fn, "__tdx_dispatch__", False):  # a Tensor subclass made earlier in this process put the
        fn = fn.__wrapped__  # __torch_function__ dispatch outermost (tdx._tensor.subclassing); the wrapper is inside
    assert getattr(fn, "_autocast_policy", False) and fn.__wrapped__ is conv.conv2d
    assert F.pixel_shuffle is importlib.import_module("tdx.compat.nn._resample").pixel_shuffle  # not listed: as is
    assert autocast_state.wrapped(F.__name__, "conv2d", F.conv2d) is F.conv2d  # never wrapped twice


def test_return_types_are_made_once_and_pickle():
    import pickle

    from tdx import return_types

    made = []
    threads = [threading.Thread(target=lambda: made.append(return_types.kthvalue)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(m is return_types.kthvalue for m in made)
    value = return_types.sort([1.0], [0])
    assert pickle.loads(pickle.dumps(value)) == value and type(value).__module__ == "tdx.return_types"
    assert value._fields == ("values", "indices") and "topk" in dir(return_types)


def test_refused_names_are_made_when_asked_and_listed():
    assert set(refused.TORCH) <= set(dir(tdx))
    assert refused.is_refused(tdx.spmm) and tdx.spmm is tdx.spmm
    with pytest.raises(tdx.UnsupportedOpError):
        tdx.spmm()


def test_the_path_index_agrees_with_the_whole_table():
    table = torch_paths.data()
    assert torch_paths._packages() == {p: e["package"] for p, e in table.items()}
    assert all(torch_paths.names(p) == e["names"] for p, e in table.items())
    assert torch_paths.names("torch.no_such_module") == {}


def test_importing_tdx_leaves_the_lazy_modules_and_the_name_table_unread():
    code = ("import sys, tdx, tdx.nn, tdx.nn.functional, tdx.optim\n"
            "from tdx.aliasing import torch_paths\n"
            "lazy = ['tdx.compat.nn.modules.conv', 'tdx.compat.nn.modules.rnn', 'tdx.compat.nn._pooling',\n"
            "        'tdx.compat.optim.lr_scheduler', 'tdx.compat.optim.adam', 'tdx.compat.nn.parallel',\n"
            "        'tdx.compat.amp.grad_scaler', 'tdx.compat.amp.autocast_mode', 'tdx.aliasing.torch_alias',\n"
            "        'tdx.aliasing.inherit', 'tdx.aliasing.torch_source', 'tdx.aliasing.absent_device']\n"
            "print([m for m in lazy if m in sys.modules], torch_paths.data.cache_info().currsize)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "0"]


def mx_eye():
    import mlx.core as mx

    return mx.eye(2)


def test_the_mlx_namespace_mixins_keep_their_place_in_the_method_order():
    pytest.importorskip("mlx.core")
    from tdx.backends.mlx import _executor, _namespaces

    mixins = _namespaces.mixins()
    theirs = {n for cls in mixins for n in vars(cls) if not n.startswith("__")}
    others = [c for c in _executor.MLXExecutor.__mro__ if c is not _namespaces.MLXNamespaceOps]
    assert not {n for c in others for n in vars(c)} & theirs  # so copying them changes no lookup
    public = {n for n in theirs if not n.startswith("_")}
    assert {n for n in public if not n.startswith(_namespaces._PREFIXES)} <= _namespaces._OUTSIDE
    assert all(n in vars(_namespaces.MLXNamespaceOps) for n in _namespaces._OUTSIDE)  # stubs until loaded
    assert "__getattr__" not in vars(_namespaces.MLXNamespaceOps)  # it would slow every executor attribute read
    ex = tdx.backends.get("mlx:cpu")
    ex.namespace_call("linalg", "inv", [mx_eye()], {})
    assert ex.linalg_inv.__func__ is mixins[0].linalg_inv and hasattr(ex, "_lgamma")
    assert not hasattr(ex, "linalg_no_such_function") and not hasattr(ex, "no_such_op")


def test_a_lazy_name_may_not_be_a_submodules_name():
    # importing tdx.autograd.gradcheck binds the module as `gradcheck`, which must stay the function
    namespace = {"__name__": "pkg", "__package__": "pkg", "__path__": []}
    with pytest.raises(ValueError, match="gradcheck"):
        lazy_names.attach(namespace, {".gradcheck": ("gradcheck",)})
    importlib.import_module("tdx.autograd.gradcheck")
    assert callable(tdx.autograd.gradcheck) and callable(tdx.autograd.variable)
