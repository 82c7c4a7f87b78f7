"""Tensor subclasses as libraries write them, run as the same source under real torch (on CPU) and under tdx on
every device: ``__torch_function__`` overrides (logging, metadata, opting out), ``super().__torch_function__``,
``DisableTorchFunctionSubclass``, ``as_subclass``, ``_make_subclass``, result types, values and gradients; and
``__torch_dispatch__`` refused by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tdx
from tdx._errors import UnsupportedOpError

LOGGED = '''
LOG = []
class Logged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        LOG.append((func.__name__, [type(a).__name__ for a in args]))
        return super().__torch_function__(func, types, args, kwargs or {})

x = torch.tensor([[1.0, -2.0], [3.0, 0.5]], device=DEV)
a = x.as_subclass(Logged)
LIN = torch.nn.Linear(2, 3).to(DEV)
with torch.no_grad():
    LIN.weight.copy_(torch.tensor([[0.5, -1.0], [2.0, 0.25], [1.0, 1.0]], device=DEV))
    LIN.bias.copy_(torch.tensor([0.1, -0.2, 0.3], device=DEV))

def no_grad_call(module, value):
    with torch.no_grad():
        return module(value)

CASES = {}
for name, make in [
        ("a+1", lambda: a + 1), ("1+a", lambda: 1 + a), ("x+a", lambda: x + a), ("a-1", lambda: a - 1),
        ("1-a", lambda: 1 - a), ("x-a", lambda: x - a), ("a*2", lambda: a * 2), ("2*a", lambda: 2 * a),
        ("a/2", lambda: a / 2), ("2/a", lambda: 2 / a), ("x/a", lambda: x / a), ("a**2", lambda: a ** 2),
        ("2**a", lambda: 2 ** a), ("a%2", lambda: a % 2), ("-a", lambda: -a), ("abs", lambda: abs(a)),
        ("a<x", lambda: a < x), ("x<a", lambda: x < a), ("a@a", lambda: a @ a), ("x@a", lambda: x @ a),
        ("a[0]", lambda: a[0]), ("a.sum(0)", lambda: a.sum(0)), ("a.relu()", lambda: a.relu()),
        ("torch.relu", lambda: torch.relu(a)), ("torch.cat", lambda: torch.cat([x, a])),
        ("torch.stack", lambda: torch.stack([a, x])), ("F.linear", lambda: torch.nn.functional.linear(a, x)),
        ("F.softmax", lambda: torch.nn.functional.softmax(a, dim=-1)), ("a.max(0)", lambda: a.max(0)),
        ("a.split", lambda: a.split(1)), ("a.t()", lambda: a.t()), ("a.float()", lambda: a.float()),
        ("a.clone", lambda: a.clone()), ("torch.where", lambda: torch.where(a > 0, a, x)),
        ("nn.Linear", lambda: LIN(a)), ("nn.Linear no_grad", lambda: no_grad_call(LIN, a)),
        ("x.add(a)", lambda: x.add(a)), ("x.mul(a, out)", lambda: x.mul(a)), ("x.matmul(a)", lambda: x.matmul(a)),
        ("x[a>0]", lambda: x[a > 0]), ("x.where", lambda: x.where(a > 0, a)), ("a.shape", lambda: a.shape),
        ("a.shape[0]", lambda: a.shape[0]), ("a.dtype", lambda: a.dtype), ("a.T", lambda: a.T),
        ("a.mT", lambda: a.mT), ("a.data", lambda: a.data), ("a.requires_grad", lambda: a.requires_grad),
        ("a.grad", lambda: a.grad), ("a.is_leaf", lambda: a.is_leaf), ("a.ndim", lambda: a.ndim),
        ("a.real", lambda: a.real), ("x.shape", lambda: x.shape), ("p.add(a)", lambda: LIN.bias[:2].add(a[0]))]:
    LOG.clear()
    out = make()
    CASES[name] = (out, list(LOG))
'''


def _run(src: str, lib, device: str) -> dict:
    ns = {"torch": lib, "DEV": device}
    exec(compile(src, "<subclass program>", "exec"), ns)  # noqa: S102 - the test's own program, twice
    return ns


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    return [out]


def _values(t):
    t = t.detach()
    return t.cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.cpu().numpy())


def _same(mine, theirs, what):
    m, t = _leaves(mine), _leaves(theirs)
    assert [type(v).__name__ for v in m] == [type(v).__name__ for v in t], what
    assert type(mine).__name__ == type(theirs).__name__ or (
        isinstance(mine, tuple) and isinstance(theirs, tuple)), what
    for u, v in zip(m, t):
        if hasattr(v, "dtype"):
            np.testing.assert_allclose(_values(u), _values(v), rtol=1e-6, atol=1e-6, err_msg=what)
        elif isinstance(v, torch.dtype):
            assert str(u).rsplit(".", 1)[-1] == str(v).rsplit(".", 1)[-1], what
        else:
            assert u == v, what


def test_torch_function_calls_and_results_as_torchs(device):
    """A logging subclass: each op reaches __torch_function__ with torch's func and operand order, and every
    result keeps the subclass through torch's default __torch_function__."""
    mine, theirs = _run(LOGGED, tdx, device), _run(LOGGED, torch, "cpu")
    assert mine["CASES"].keys() == theirs["CASES"].keys()
    for name, (out, log) in theirs["CASES"].items():
        got, got_log = mine["CASES"][name]
        assert got_log == log, name
        _same(got, out, name)


PATTERNS = '''
class Plain(torch.Tensor):
    pass

class OptOut(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl

class Meta(torch.Tensor):
    """Carries metadata through ops, calling func itself with the protocol off (a common library form)."""
    @staticmethod
    def __new__(cls, data, meta):
        t = torch.Tensor._make_subclass(cls, data, data.requires_grad)
        t.meta = meta
        return t

    def __init__(self, data, meta):
        pass

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        metas = [a.meta for a in args if isinstance(a, Meta)]
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and not isinstance(out, Meta):
            out = out.as_subclass(Meta)
            out.meta = metas[0] if metas else None
        return out

class Refuses(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return NotImplemented

x = torch.tensor([1.0, -2.0, 3.0], device=DEV)
p = x.as_subclass(Plain)
o = x.as_subclass(OptOut)
m = Meta(x, {"unit": "m"})
n = Meta(torch.ones(3, device=DEV), {"unit": "s"})
OUT = {
    "plain": p.exp() + p,
    "plain_fn": torch.exp(p),
    "opt_out": o.exp() + o,
    "opt_out_cat": torch.cat([o, x, o]),
    "opt_out_arg": x.add(o) * o.sum(),
    "meta_add": m + n,
    "meta_fn": torch.nn.functional.relu(m),
    "meta_method": m.sum(),
    "meta_meta": (m * 2).meta,
    "meta_right": (x * m).meta,
}
with torch._C.DisableTorchFunctionSubclass():
    OUT["disabled"] = p * 3
    OUT["disabled_meta"] = m + n
try:
    x.as_subclass(Refuses) + 1
except TypeError as err:
    OUT["not_implemented"] = str(err)
try:
    x.as_subclass(Refuses).add(1)
except TypeError as err:
    OUT["method_not_implemented"] = str(err).replace(__name__ + ".", "")
try:
    torch.relu(x.as_subclass(Refuses))
except TypeError as err:
    OUT["function_not_implemented"] = str(err).replace(__name__ + ".", "")
'''


# a subclass that logs the name of each function its __torch_function__ receives
LOGGED_BY_NAME = '''
LOG = []
class Logged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        LOG.append(func.__name__)
        return super().__torch_function__(func, types, args, kwargs or {})
'''

AROUND_AUTOCAST = LOGGED_BY_NAME + '''
a = torch.tensor([1.0, -2.0], device=DEV).as_subclass(Logged)
SEEN = {}
for when in ("before", "inside", "after"):
    LOG.clear()
    if when == "inside":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            outs = [torch.cat([a, a]), torch.exp(a), a.add(1), a.sum()]
    else:
        outs = [torch.cat([a, a]), torch.exp(a), a.add(1), a.sum()]
    SEEN[when] = (list(LOG), [type(o).__name__ for o in outs])
'''


def test_an_autocast_region_keeps_subclass_dispatch(device):
    """Opening and closing an autocast region swaps the ``torch.*`` functions and ``Tensor`` methods it casts; a
    subclass's ``__torch_function__`` sees the same calls and keeps its type before, inside and after, as torch's."""
    mine, theirs = _run(AROUND_AUTOCAST, tdx, device), _run(AROUND_AUTOCAST, torch, "cpu")
    assert mine["SEEN"] == theirs["SEEN"]


def test_library_patterns_as_torchs(device):
    """A plain subclass keeps its type, an opted-out one gives plain tensors, a metadata subclass calling func
    itself under DisableTorchFunctionSubclass works, and all-NotImplemented is torch's TypeError."""
    mine, theirs = _run(PATTERNS, tdx, device), _run(PATTERNS, torch, "cpu")
    assert mine["OUT"].keys() == theirs["OUT"].keys()
    for name, want in theirs["OUT"].items():
        _same(mine["OUT"][name], want, name)
    assert mine["OUT"]["meta_meta"] == {"unit": "m"} and mine["OUT"]["meta_right"] == {"unit": "m"}


SHARING = '''
class S(torch.Tensor):
    pass

x = torch.tensor([1.0, 2.0, 3.0], device=DEV, requires_grad=True)
y = x.as_subclass(S)
(y * y).sum().backward()
GRAD = x.grad.clone()
FLAGS = (y.requires_grad, y.is_leaf, isinstance(y, S), isinstance(y, torch.Tensor))
base = torch.zeros(3, device=DEV)
alias = base.as_subclass(S)
base.add_(1)
SEEN = alias.clone()
made = torch.Tensor._make_subclass(S, base, True)
MADE = (type(made).__name__, made.requires_grad, made.is_leaf)
with torch.no_grad():
    base.mul_(5)
SEEN_MADE = made.detach().clone()
(made * 2).sum().backward()
MADE_GRAD = made.grad.clone()
'''


def test_as_subclass_and_make_subclass_share_data_and_graph(device):
    """as_subclass shares data and the graph (gradients reach the original); _make_subclass shares data,
    detached, with requires_grad as asked: values, flags and gradients as torch's."""
    mine, theirs = _run(SHARING, tdx, device), _run(SHARING, torch, "cpu")
    for key in ("GRAD", "SEEN", "SEEN_MADE", "MADE_GRAD"):
        _same(mine[key], theirs[key], key)
    assert mine["FLAGS"] == theirs["FLAGS"]
    assert mine["MADE"] == theirs["MADE"]


PLAIN_COST = """
import tdx
from tdx import add as early
before = [getattr(f, "__tdx_dispatch__", False) for f in (tdx.Tensor.add, tdx.Tensor.sum, tdx.add)]
p = tdx.nn.Parameter(tdx.ones(1))
after_parameter = [getattr(f, "__tdx_dispatch__", False) for f in (tdx.Tensor.add, tdx.Tensor.sum, tdx.add)]
class Sub(tdx.Tensor):
    pass
after_sub = [getattr(f, "__tdx_dispatch__", False) for f in (tdx.Tensor.add, tdx.Tensor.sum, tdx.add, Sub.add)]
print(before, after_parameter, after_sub, type(tdx.ones(1).add(1)).__name__, type(p.exp()).__name__,
      getattr(early, "__tdx_dispatch__", False))
"""


CONSTRUCTED = '''
class Tagged(torch.Tensor):
    """The constructor form of many libraries' subclasses: torch's legacy constructor through super()."""
    @staticmethod
    def __new__(cls, data, tag=None):
        return super().__new__(cls, data)

    def __init__(self, data, tag=None):
        self.tag = tag

class Bare(torch.Tensor):
    pass

class Remade(torch.Tensor):
    """Methods that rebuild through ``self.__class__`` and name it, as library subclasses do."""
    def doubled(self):
        return self.__class__(self.detach() * 2)

    def describe(self):
        return f"{self.__class__.__name__} of {tuple(self.shape)}"

base = torch.tensor([1.0, -2.0, 3.0], device=DEV, requires_grad=True)
t = Tagged(base, tag="w")
param = torch.nn.Parameter(torch.ones(2, device=DEV))
remade = base.detach().as_subclass(Remade)
(t * t).sum().backward()
OUT = {
    "legacy": (torch.Tensor([1, 2]).tolist(), torch.Tensor([1, 2]).dtype, tuple(torch.Tensor(2, 3).shape),
               tuple(torch.Tensor().shape), tuple(torch.Tensor(torch.Size([4])).shape),
               torch.Tensor(torch.tensor([1, 2])).dtype),
    "tagged": (type(t).__name__, t.tag, t.requires_grad, t.is_leaf, base.grad.tolist(), type(t + 1).__name__,
               (t + 1).tolist()),
    "bare": (type(Bare([1.0, 2.0])).__name__, Bare([1.0, 2.0]).tolist(), tuple(Bare(2, 2).shape),
             type(Bare(base.detach()) * 2).__name__),
    "classes": (t.__class__.__name__, t.__class__ is Tagged, param.__class__.__name__,
                param.__class__ is torch.nn.Parameter, type(param.__class__(torch.zeros(2, device=DEV))).__name__,
                param.__class__(torch.zeros(2, device=DEV), requires_grad=False).requires_grad,
                type(remade.doubled()).__name__, remade.doubled().tolist(), remade.describe(),
                (t + 1).__class__.__name__, torch.ones(1).__class__.__name__),
    "repr": (repr(Bare([1.0, 2.5])), repr(Bare([1.0, 2.5]).sum()), repr(torch.Tensor([1.5]))),
}
try:
    torch.Tensor([1], [2])
except TypeError as err:
    OUT["bad"] = isinstance(err, TypeError)
'''


def test_legacy_constructor_and_subclass_constructors_as_torchs(device):
    """``torch.Tensor(data)`` / ``(sizes)`` / ``()`` / ``(tensor)``, and subclasses built through it (``super().__new__``
    in ``__new__``, or the class called on data): types, values, graph, attributes and reprs as torch's."""
    mine, theirs = _run(CONSTRUCTED, tdx, device), _run(CONSTRUCTED, torch, "cpu")
    want = dict(theirs["OUT"])
    got = dict(mine["OUT"])
    for key in ("legacy",):
        got[key] = tuple(str(v).replace("tdx.", "torch.") for v in got[key])
        want[key] = tuple(str(v) for v in want[key])
    if device != "cpu":  # the repr names the device
        got["repr"] = tuple(r.replace(f", device='{device}'", "") for r in got["repr"])
    assert got == want


def test_plain_tensors_pay_nothing_until_a_subclass_takes_part():
    """A program that defines no subclass taking part in the protocol (opted-out Parameter included) keeps
    the facade's own methods and functions; the first that does makes them ask their arguments (as torch's
    ``plain.add(sub)``), a name the program imported before it included, and plain calls still give plain
    tensors."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", PLAIN_COST], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["[False,", "False,", "False]", "[False,", "False,", "False]", "[True,", "True,", "True,",
                           "True]", "Tensor", "Tensor", "True"], out  # the early name is rebound too
    assert type(tdx.ones(1)) is tdx.Tensor and tdx.ones(1).__class__ is tdx.Tensor
    assert tdx.nn.Parameter(tdx.ones(1)).exp().__class__ is tdx.Tensor  # opted out, as torch's Parameter


def test_bad_arguments(device):
    """as_subclass/_make_subclass of a non-Tensor class: torch's TypeError."""
    x = tdx.ones(2, device=device)
    with pytest.raises(TypeError, match="as_subclass"):
        x.as_subclass(int)
    with pytest.raises(TypeError, match="_make_subclass"):
        tdx.Tensor._make_subclass(dict, x)


def test_torch_dispatch_refused_by_name(device):
    """A __torch_dispatch__ subclass needs torch's dispatcher: making an instance raises a typed error naming
    __torch_dispatch__; defining the class (an import) works."""

    class Dispatching(tdx.Tensor):
        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    x = tdx.ones(2, device=device)
    for make in (lambda: x.as_subclass(Dispatching), lambda: tdx.Tensor._make_subclass(Dispatching, x),
                 lambda: tdx.Tensor._make_wrapper_subclass(Dispatching, (2,), dtype=tdx.float32)):
        with pytest.raises(UnsupportedOpError, match="__torch_dispatch__") as info:
            make()
        assert isinstance(info.value, NotImplementedError)


def _module_subclass():
    """A tdx Tensor subclass importable by name (pickle finds classes by module and name), made on first use."""
    cls = globals().get("Saved")
    if cls is None:
        cls = type("Saved", (tdx.Tensor,), {"__module__": __name__})
        globals()["Saved"] = cls
    return cls


class TorchSaved(torch.Tensor):
    pass


def test_subclass_pickles_and_saves_as_torchs(device, tmp_path):
    """A subclass instance comes back as its class, with its attributes, through pickle, deepcopy and
    tdx.save/tdx.load; weights_only refuses the unlisted class, as torch's does, and safe_globals admits it."""
    import copy
    import pickle

    cls = _module_subclass()
    t = tdx.arange(3.0, device=device).as_subclass(cls)
    t.tag = 5
    ref = torch.arange(3.0).as_subclass(TorchSaved)
    ref.tag = 5
    got, want = pickle.loads(pickle.dumps(t)), pickle.loads(pickle.dumps(ref))
    assert (type(got).__name__, got.tag) == ("Saved", 5) and (type(want).__name__, want.tag) == ("TorchSaved", 5)
    assert got.device == t.device
    np.testing.assert_array_equal(_values(got), _values(want))
    # torch's deepcopy of a subclass without its own new_empty raises; tdx's copies it as its class
    with pytest.raises(RuntimeError, match="new_empty"):
        copy.deepcopy(ref)
    got = copy.deepcopy(t)
    assert type(got) is cls and got.tag == 5 and got.device == t.device and got.is_leaf
    np.testing.assert_array_equal(_values(got), _values(ref))
    tdx.save(t, tmp_path / "t.pt")
    torch.save(ref, tmp_path / "r.pt")
    got = tdx.load(tmp_path / "t.pt", weights_only=False, map_location=device)
    assert type(got) is cls and got.tag == 5 and got.device == tdx.device(device)
    for load, path in ((tdx.load, "t.pt"), (torch.load, "r.pt")):
        with pytest.raises(Exception, match="Saved") as info:
            load(tmp_path / path, weights_only=True)
        assert isinstance(info.value, __import__("pickle").UnpicklingError)
    with tdx.serialization.safe_globals([cls]):
        assert type(tdx.load(tmp_path / "t.pt", weights_only=True, map_location=device)) is cls


OVERRIDES = LOGGED_BY_NAME + '''
def scaled(x, k=2.0):
    """A library function that dispatches itself, as torch's documentation shows."""
    if torch.overrides.has_torch_function_unary(x):
        return torch.overrides.handle_torch_function(scaled, (x,), x, k=k)
    return x * k

x = torch.tensor([1.0, 2.0], device=DEV)
OUT = {"plain": scaled(x), "sub": scaled(x.as_subclass(Logged)),
       "has": (torch.overrides.has_torch_function((x,)), torch.overrides.has_torch_function((x.as_subclass(Logged),)),
               torch.overrides.has_torch_function_variadic(x, x.as_subclass(Logged)))}
with torch._C.DisableTorchFunctionSubclass():
    OUT["disabled"] = torch.overrides.has_torch_function_unary(x.as_subclass(Logged))
OUT["log"] = list(LOG)
'''


def test_library_functions_dispatch_through_torch_overrides(device):
    """torch.overrides.has_torch_function*/handle_torch_function answer and dispatch as torch's."""
    mine, theirs = _run(OVERRIDES, tdx, device), _run(OVERRIDES, torch, "cpu")
    for name, want in theirs["OUT"].items():
        _same(mine["OUT"][name], want, name)


def test_torch_tensors_handed_to_tdx_are_data_not_overrides(device):
    """Once any subclass exists, a real torch tensor given to a tdx function (``as_tensor``, ``tensor``,
    ``from_dlpack``, an operand) is converted as before: its own ``__torch_function__`` (torch's) would call the
    tdx function again, without end."""
    class Sub(tdx.Tensor):
        pass

    src = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert getattr(tdx.as_tensor, "__tdx_dispatch__", False)  # the namespaces are dispatching now
    for got in (tdx.as_tensor(src, device=device), tdx.tensor(src, device=device),
                tdx.as_tensor(src.clone()).to(device)):
        assert type(got) is tdx.Tensor
        np.testing.assert_array_equal(got.cpu().numpy(), src.numpy())
    assert isinstance(tdx.ones(1).as_subclass(Sub), Sub)
