"""Config discovery, precedence, validation, and device translation; ``import tdx`` stays light."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tdx
from tdx import config

ROOT = Path(__file__).resolve().parents[1]


def run(code: str, cwd, env=None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter in ``cwd`` with a clean tdx environment."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TDX_")}
    base["XDG_CONFIG_HOME"] = str(Path(cwd) / "xdg")
    base.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=base,
                          capture_output=True, text=True, timeout=120)


def test_import_tdx_imports_no_framework(tmp_path):
    r = run("""
        import sys, tdx, tdx.backends, tdx.config, tdx.testing, tdx.autograd
        tdx.device("cuda:1"); tdx.float32; tdx.backends.providers()
        bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'mlx')]
        assert not bad, bad
        print("ok")
    """, tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_tdx_toml_sets_default_device_and_env_overrides(tmp_path):
    (tmp_path / "tdx.toml").write_text('default_device = "mlx"\n')
    code = "import tdx; print(tdx.zeros(3).device.type, tdx.config.current().origin['default_device'])"
    r = run(code, tmp_path)
    assert r.returncode == 0, r.stderr
    kind, origin = r.stdout.split()
    assert kind == "mlx" and origin.endswith("tdx.toml")
    r = run(code, tmp_path, {"TDX_DEVICE": "cpu"})
    assert r.returncode == 0 and r.stdout.split() == ["cpu", "TDX_DEVICE"], r.stderr
    r = run("import tdx; tdx.set_default_device('mlx:cpu'); print(tdx.zeros(1).device)", tmp_path,
            {"TDX_DEVICE": "cpu"})
    assert r.stdout.strip() == "mlx:cpu", r.stderr


def test_typo_key_names_file_key_value_and_allowed(tmp_path):
    (tmp_path / "tdx.toml").write_text('defualt_device = "mlx"\n')
    r = run("import tdx; tdx.zeros(1)", tmp_path)
    assert r.returncode != 0
    err = r.stderr.strip().splitlines()[-1]
    assert "ConfigError" in err and "tdx.toml" in err and "'defualt_device'" in err
    assert "did you mean 'default_device'" in err and "allowed keys" in err


def _layers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for k in ("TDX_DEVICE", "TDX_CONFIG"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return config.Config(config.sources(tmp_path))


def test_precedence_order(tmp_path, monkeypatch):
    (tmp_path / "xdg" / "tdx").mkdir(parents=True)
    (tmp_path / "xdg" / "tdx" / "config.toml").write_text('default_device = "cpu"\nstrict = true\n'
                                                         'fallback = ["cpu"]\n')
    (tmp_path / "pyproject.toml").write_text('[tool.tdx]\ndefault_device = "mlx:cpu"\nstrict = false\n')
    cfg = _layers(tmp_path, monkeypatch)
    assert cfg["default_device"] == "mlx:cpu" and cfg.origin["default_device"].endswith("[tool.tdx]")
    assert cfg["strict"] is False and cfg["fallback"] == ["cpu"] and cfg.origin["fallback"].endswith("config.toml")
    assert cfg.origin["device_map"] == config.BUILTIN
    (tmp_path / "tdx.toml").write_text('default_device = "mps"\n[attention]\npriority = ["math"]\n')
    cfg = _layers(tmp_path, monkeypatch)
    assert cfg["default_device"] == "mps" and cfg["attention.priority"] == ["math"]
    other = tmp_path / "other.toml"
    other.write_text('default_device = "cuda:1"\n')
    monkeypatch.setenv("TDX_CONFIG", str(other))
    cfg = config.Config(config.sources(tmp_path))
    assert cfg["default_device"] == "cuda:1" and "TDX_CONFIG" in cfg.origin["default_device"]
    monkeypatch.setenv("TDX_DEVICE", "mlx")
    cfg = config.Config(config.sources(tmp_path))
    assert cfg["default_device"] == "mlx" and cfg.origin["default_device"] == "TDX_DEVICE"


# layer -> the keys it sets (TOML lines); each key is set by several layers, so each layer must merge key by key
_LAYERS = {
    "user": {"default_device": '"cpu"', "strict": "true", "fallback": '["cpu"]', "auto_transfer": "true",
             "backends.torch.num_threads": "3", "backends.mlx.fused_sdpa": "false"},
    "pyproject": {"default_device": '"mlx:cpu"', "strict": "false", "attention.priority": '["chunked"]',
                  "backends.torch.num_threads": "2", "device_map": '{cuda = "cpu"}'},
    "local": {"default_device": '"mps"', "attention.priority": '["math"]', "backends.mlx.downcast_float64": "true",
              "device_map": '{mps = "cpu"}'},
    "env_file": {"default_device": '"cuda:1"', "backends.mlx.fused_sdpa": "true", "backends.torch.num_threads": "4"},
}


def _toml(keys: dict) -> str:
    """TOML text setting dotted ``keys``: top-level keys first, then one table per section."""
    top = [f"{k} = {v}" for k, v in keys.items() if "." not in k]
    sections = {}
    for k, v in keys.items():
        if "." in k:
            section, name = k.rsplit(".", 1)
            sections.setdefault(section, []).append(f"{name} = {v}")
    return "\n".join(top + [f"[{s}]\n" + "\n".join(lines) for s, lines in sections.items()]) + "\n"


@pytest.mark.parametrize("present", [("user", "pyproject", "local", "env_file"), ("user", "local", "env_file"),
                                     ("pyproject", "env_file"), ("user", "pyproject", "local"), ("local",)])
def test_every_layer_merges_key_by_key(tmp_path, monkeypatch, present):
    """With several layers present, each key comes from the highest layer that sets it, whichever else is set."""
    places = {"user": tmp_path / "xdg" / "tdx" / "config.toml", "pyproject": tmp_path / "pyproject.toml",
              "local": tmp_path / "tdx.toml", "env_file": tmp_path / "elsewhere" / "env.toml"}
    for name in present:
        places[name].parent.mkdir(parents=True, exist_ok=True)
        text = _toml(_LAYERS[name])
        places[name].write_text("[tool.tdx]\n" + text.replace("\n[", "\n[tool.tdx.") if name == "pyproject"
                                else text)
    _layers(tmp_path, monkeypatch)  # a clean environment, run from tmp_path
    if "env_file" in present:
        monkeypatch.setenv("TDX_CONFIG", str(places["env_file"]))
    monkeypatch.setenv("TDX_DEVICE", "mlx")
    cfg = config.Config(config.sources(tmp_path))
    order = ["user", "pyproject", "local", "env_file"]  # lowest precedence first
    for key, (_, default) in config.SCHEMA.items():
        setters = [n for n in order if n in present and key in _LAYERS[n]]
        if key == "default_device":
            want, origin = "mlx", "TDX_DEVICE"
        elif setters:
            want = config.tomllib.loads(f"v = {_LAYERS[setters[-1]][key]}")["v"]
            origin = str(places[setters[-1]])
        else:
            want, origin = default, config.BUILTIN
        assert cfg[key] == want, (key, cfg[key], want)
        assert cfg.origin[key].startswith(origin), (key, cfg.origin[key], origin)


def test_nearest_pyproject_is_found_from_a_subfolder(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.tdx]\nstrict = true\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert _layers(sub, monkeypatch)["strict"] is True


@pytest.mark.parametrize("text, needle", [
    ('default_device = "tpu"', "'default_device' has bad value 'tpu'"),
    ('default_device = 3', "expected a device string"),
    ('strict = "yes"', "'strict' has bad value 'yes': expected true or false"),
    ('fallback = "cpu"', "'fallback' has bad value 'cpu'"),
    ('fallback = ["cpu", "gpu"]', "entry 'gpu'"),
    ('device_map = {cuda = "metal"}', "entry 'metal'"),
    ('[backends.torch]\nnum_threads = 0', "'backends.torch.num_threads'"),
    ('[attention]\npriority = ["fastest"]', "unknown kernel 'fastest'"),
    ('[backends.jax]\nx = 1', "unknown key 'backends.jax'"),
    ('default_device = ', "not valid TOML"),
])
def test_bad_values_are_named(tmp_path, monkeypatch, text, needle):
    (tmp_path / "tdx.toml").write_text(text + "\n")
    with pytest.raises(tdx.ConfigError) as info:
        _layers(tmp_path, monkeypatch)
    assert needle in str(info.value) and "tdx.toml" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_bad_env_device(tmp_path, monkeypatch):
    monkeypatch.delenv("TDX_CONFIG", raising=False)
    monkeypatch.setenv("TDX_DEVICE", "gpu0")
    with pytest.raises(tdx.ConfigError, match="TDX_DEVICE has bad value 'gpu0'"):
        config.sources(tmp_path)
    monkeypatch.delenv("TDX_DEVICE")
    monkeypatch.setenv("TDX_RUN_DEVICE", "gpu0")  # python -m tdx run's device: checked the same way
    with pytest.raises(tdx.ConfigError, match="TDX_RUN_DEVICE has bad value 'gpu0'"):
        config.sources(tmp_path)
    monkeypatch.setenv("TDX_RUN_DEVICE", "cpu")
    cfg = config.Config(config.sources(tmp_path))
    assert cfg["run.device"] == "cpu" and cfg.origin["run.device"] == "TDX_RUN_DEVICE"


def test_translation_warns_once_and_strict_refuses(tmp_path):
    (tmp_path / "tdx.toml").write_text('device_map = {cuda = "mlx:cpu"}\n')
    r = run("""
        import warnings, tdx
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = tdx.zeros(2, device="cuda"); b = tdx.ones(2, device="cuda:0"); c = tdx.zeros(1).to("cuda")
        msgs = [str(x.message) for x in w if issubclass(x.category, UserWarning)]
        print(a.device, b.device, c.device, len(msgs)); print(msgs[0])
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    first, msg = r.stdout.strip().splitlines()
    devs = first.split()
    assert devs[:3] == ["mlx:cpu"] * 3 and int(devs[3]) <= 2  # 'cuda' and 'cuda:0' are two requests
    assert "'cuda'" in msg and "'mlx:cpu'" in msg and "device_map" in msg
    (tmp_path / "tdx.toml").write_text('strict = true\n')
    r = run("import tdx; tdx.zeros(2, device='cuda')", tmp_path)
    assert r.returncode != 0 and "DeviceUnavailableError" in r.stderr and "strict = true" in r.stderr


def test_fallback_without_map(tmp_path):
    (tmp_path / "tdx.toml").write_text('fallback = ["mlx:gpu", "mlx:cpu"]\n')
    r = run("import tdx; print(tdx.zeros(1, device='mps').device)", tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "mlx:cpu", r.stderr


def test_backends_torch_section_is_applied(tmp_path):
    (tmp_path / "tdx.toml").write_text("[backends.torch]\nnum_threads = 1\nallow_tf32 = true\n")
    r = run("""
        import tdx, torch
        tdx.zeros(1, device="cpu")
        print(torch.get_num_threads(), torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["1", "True", "True"]


def test_mlx_downcast_float64_is_opt_in_and_warns(tmp_path):
    """``[backends.mlx] downcast_float64``: float64 on an MLX GPU becomes float32 with a warning."""
    pytest.importorskip("mlx.core")
    script = """
        import warnings, numpy as np, mlx.core as mx, tdx
        from tdx.backends.mlx._executor import MLXExecutor
        from tdx._tensor.wrapping import wrap
        ex = MLXExecutor(tdx.device("mlx:gpu"))
        ex.s = mx.cpu  # the GPU's capabilities, run on the CPU stream (no GPU here)
        print(tdx.backends.mlx.downcast_float64_enabled())
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                t = wrap(ex.from_data(np.array([1.5, 2.25]), None), ex)
                print(t.dtype, t.tolist(), t.double().dtype, [x.category.__name__ for x in w])
            except tdx.DtypeError as err:
                print("refused", "float64" in str(err))
    """
    assert run(script, tmp_path).stdout.split() == ["False", "refused", "True"]
    (tmp_path / "tdx.toml").write_text("[backends.mlx]\ndowncast_float64 = true\n")
    r = run(script, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "tdx.float32", "[1.5,", "2.25]", "tdx.float32",
                                "['PrecisionWarning',", "'PrecisionWarning']"]


def test_auto_transfer_moves_operands_only_when_the_config_allows(tmp_path):
    """``auto_transfer = true``: an operand on another executor is moved to the first operand's;
    off (the default): torch's mixed-device error. A tensor that requires grad is never moved
    between frameworks (the move would not be differentiable)."""
    pytest.importorskip("mlx.core")
    script = """
        import tdx
        a, b = tdx.ones(2, 3, device="mlx:cpu"), tdx.arange(3.0, device="cpu")
        try:
            out = [a + b, a.mul(b), tdx.cat([a, b[None]]), tdx.einsum("ij,j->i", a, b), tdx.lerp(a, b, 0.5)]
            a[0] = b
            print([str(o.device) for o in out], a.tolist()[0], (b + a[1]).device)
        except tdx.TdxError as err:
            print(type(err).__name__)
        g = tdx.arange(3.0, device="cpu", requires_grad=True)
        try:
            with tdx.no_grad():
                tdx.ones(3, device="mlx:cpu") * g  # no gradient to lose: moved when allowed
            tdx.ones(3, device="mlx:cpu") * g
        except tdx.TdxError as err:
            print(type(err).__name__)
    """
    r = run(script, tmp_path)
    assert r.stdout.split() == ["DeviceMismatchError", "DeviceMismatchError"], r.stderr
    (tmp_path / "tdx.toml").write_text("auto_transfer = true\n")
    r = run(script, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["['mlx:cpu',", "'mlx:cpu',", "'mlx:cpu',", "'mlx:cpu',", "'mlx:cpu']", "[0.0,", "1.0,",
                                "2.0]",
                                "cpu", "UnsupportedOpError"], r.stdout


def test_built_in_defaults_are_the_documented_ones(tmp_path, monkeypatch):
    """With no file and no environment, every key has the default README's config section documents."""
    cfg = _layers(tmp_path, monkeypatch)
    assert cfg.values == {"default_device": "auto", "device_map": {}, "strict": False, "auto_transfer": False,
                          "fallback": ["cuda", "mps", "mlx:gpu", "cpu", "mlx:cpu"], "attention.priority": [],
                          "backends.torch.allow_tf32": None, "backends.torch.num_threads": None,
                          "backends.mlx.fused_sdpa": True, "backends.mlx.downcast_float64": False, "run.device": None,
                          "random.stream": "torch", "backends.mlx.summation": "auto"}
    assert set(cfg.origin.values()) == {config.BUILTIN}


@pytest.mark.parametrize("text, error", [
    ("fallback = []", "'fallback' has bad value []: expected a non-empty list of device strings ('cpu', "),
    ('fallback = ["auto"]', "entry 'auto': unknown device; allowed: 'cpu', 'cuda'"),
    ('device_map = {auto = "cpu"}', "entry 'auto': unknown device; allowed: 'cpu', 'cuda'"),
    ('default_device = "gpu"', "unknown device; allowed: 'auto', 'cpu', 'cuda'"),
    ("[backends.torch]\nnum_threads = 0", "expected a positive integer"),
    ("[backends.torch]\nnum_threads = true", "expected a positive integer"),
    ('[attention]\npriority = ["math", 3]', "expected a list of kernel names from flash, "),
    ('[attention]\npriority = "math"', "expected a list of kernel names"),
])
def test_bad_values_name_what_is_accepted(tmp_path, monkeypatch, text, error):
    (tmp_path / "tdx.toml").write_text(text + "\n")
    with pytest.raises(tdx.ConfigError) as info:
        _layers(tmp_path, monkeypatch)
    assert error in str(info.value), str(info.value)


@pytest.mark.parametrize("text, key, value", [
    ("[backends.torch]\nnum_threads = 1", "backends.torch.num_threads", 1),
    ('fallback = ["mlx:cpu"]', "fallback", ["mlx:cpu"]),
    ('[attention]\npriority = ["math", "chunked"]', "attention.priority", ["math", "chunked"]),
    ('default_device = "auto"', "default_device", "auto"),
])
def test_edge_values_are_accepted(tmp_path, monkeypatch, text, key, value):
    (tmp_path / "tdx.toml").write_text(text + "\n")
    assert _layers(tmp_path, monkeypatch)[key] == value


def test_env_device_auto_is_accepted(tmp_path, monkeypatch):
    _layers(tmp_path, monkeypatch)
    monkeypatch.setenv("TDX_DEVICE", "auto")
    cfg = config.Config(config.sources(tmp_path))
    assert cfg["default_device"] == "auto" and cfg.origin["default_device"] == "TDX_DEVICE"


def _config_error(tmp_path, monkeypatch, env=None) -> str:
    """The message of the ConfigError reading the config in ``tmp_path`` raises."""
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with pytest.raises(tdx.ConfigError) as info:
        config.sources(tmp_path)
    assert isinstance(info.value, ValueError)
    return str(info.value)


@pytest.mark.parametrize("make, needle", [
    (lambda p: p.symlink_to(p.parent / "missing.toml"), "a symlink to"),
    (lambda p: p.symlink_to(p), "a symlink loop"),
    (lambda p: p.mkdir(), "is a directory"),
])
def test_tdx_toml_that_is_no_file_is_refused_not_ignored(tmp_path, monkeypatch, make, needle):
    for k in ("TDX_DEVICE", "TDX_CONFIG"):
        monkeypatch.delenv(k, raising=False)
    make(tmp_path / "tdx.toml")
    msg = _config_error(tmp_path, monkeypatch)
    assert msg.startswith(str(tmp_path / "tdx.toml")) and needle in msg, msg


def test_tdx_config_env_names_what_is_wrong(tmp_path, monkeypatch):
    monkeypatch.delenv("TDX_DEVICE", raising=False)
    msg = _config_error(tmp_path, monkeypatch, {"TDX_CONFIG": str(tmp_path)})
    assert "(TDX_CONFIG)" in msg and "is a directory" in msg and "does not exist" not in msg, msg
    msg = _config_error(tmp_path, monkeypatch, {"TDX_CONFIG": str(tmp_path / "nope.toml")})
    assert "nope.toml (TDX_CONFIG): no such file" in msg, msg
    monkeypatch.setenv("TDX_CONFIG", os.devnull)  # the usual way to say "no config file": no settings
    assert config.Config(config.sources(tmp_path)).values["default_device"] == "auto"


@pytest.mark.parametrize("text, needle", [
    ("tool = 1\n", "pyproject.toml: key 'tool' has bad value 1: expected a table"),
    ("[tool]\ntdx = 2\n", "pyproject.toml [tool.tdx]: bad value 2: expected a table"),
])
def test_pyproject_tool_that_is_no_table(tmp_path, monkeypatch, text, needle):
    for k in ("TDX_DEVICE", "TDX_CONFIG"):
        monkeypatch.delenv(k, raising=False)
    (tmp_path / "pyproject.toml").write_text(text)
    assert needle in _config_error(tmp_path, monkeypatch)


@pytest.mark.parametrize("data, needle", [
    (b'default_device = "cpu\xff"\n', "not valid UTF-8 (byte 0xff at line 1"),
    (b"x = " + b"[" * 100_000 + b"\n", "nested too deeply"),
    (b"[backends.torch]\nnum_threads = 9223372036854775807\n", "at most 2147483647"),
    (b"fallback = [" + b"[" * 100 + b"]" * 100 + b"]\n", "entry [[[[...]]]]: expected a device string"),
])
def test_unreadable_or_unusable_files_name_the_file(tmp_path, monkeypatch, data, needle):
    for k in ("TDX_DEVICE", "TDX_CONFIG"):
        monkeypatch.delenv(k, raising=False)
    (tmp_path / "tdx.toml").write_bytes(data)
    msg = _config_error(tmp_path, monkeypatch)
    assert msg.startswith(str(tmp_path / "tdx.toml")) and needle in msg, msg[:300]


def test_largest_thread_count_torch_takes_is_accepted(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    (tmp_path / "tdx.toml").write_text("[backends.torch]\nnum_threads = 2147483647\n")
    assert _layers(tmp_path, monkeypatch)["backends.torch.num_threads"] == 2**31 - 1
    with pytest.raises((ValueError, RuntimeError)):
        torch.set_num_threads(2**31)  # the first value refused: the bound is torch's


def test_huge_bad_values_are_cut_short(tmp_path, monkeypatch):
    monkeypatch.delenv("TDX_CONFIG", raising=False)
    big = "x" * 20_000_000
    (tmp_path / "tdx.toml").write_text(f'default_device = "{big}"\n')
    msg = _config_error(tmp_path, monkeypatch)
    assert "'default_device' has bad value 'xxxx" in msg and "..." in msg and len(msg) < 400, msg[:500]
    (tmp_path / "tdx.toml").unlink()
    msg = _config_error(tmp_path, monkeypatch, {"TDX_DEVICE": "cuda:" + big})
    assert "TDX_DEVICE has bad value 'cuda:xxx" in msg and len(msg) < 400, msg[:500]


@pytest.mark.parametrize("value", ["cuda:²", "cuda:٣", "cuda:" + "9" * 5000])
def test_env_device_with_non_ascii_or_huge_index(tmp_path, monkeypatch, value):
    monkeypatch.delenv("TDX_CONFIG", raising=False)
    msg = _config_error(tmp_path, monkeypatch, {"TDX_DEVICE": value})
    assert "TDX_DEVICE has bad value" in msg and "unknown device" in msg and len(msg) < 400, msg
    if len(value) < 10:
        torch = pytest.importorskip("torch")
        with pytest.raises(RuntimeError, match="Invalid device string"):
            torch.device(value)  # torch refuses these too
        with pytest.raises(tdx.InvalidDeviceError):
            tdx.device(value)
