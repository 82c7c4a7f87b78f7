"""``tdx.hub`` (torch's ``torch.hub``): models from a repository's ``hubconf.py`` and weights by URL.

``load(repo_dir, model, source="local")`` imports ``repo_dir/hubconf.py``, checks its ``dependencies`` and
calls the entry point ``model`` with the arguments, as torch does; ``list``/``help`` answer from the same
file. ``source="github"`` reads ``owner/repo[:ref]`` from the hub cache (``get_dir()``) and downloads the
zipball when it is not there. ``load_state_dict_from_url`` loads a cached file from ``get_dir()/checkpoints``
with ``tdx.load`` and downloads it first when missing; ``download_url_to_file`` writes a URL to a file
(``file://`` URLs too), checking a SHA-256 prefix when given. A download that cannot reach its URL (an
offline machine) raises :class:`HubDownloadError` (a ``TdxError`` and the ``OSError`` torch's urllib raises)
naming the URL; nothing is left half-written. Must never import a framework at import time.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile

from ..._errors import TdxError, TdxRuntimeError, TdxValueError

__all__ = ["load", "list", "help", "get_dir", "set_dir", "load_state_dict_from_url", "download_url_to_file",
           "HubDownloadError", "MODULE_HUBCONF", "VAR_DEPENDENCY", "ENV_TORCH_HOME", "ENV_XDG_CACHE_HOME",
           "DEFAULT_CACHE_DIR", "READ_DATA_CHUNK", "HASH_REGEX", "ENV_GITHUB_TOKEN", "MAP_LOCATION"]

__tdx_partial__ = True  # tqdm (torch's progress bar import) refuses at use (tdx.aliasing.torch_paths)

MODULE_HUBCONF = "hubconf.py"
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
MAP_LOCATION = None  # torch's type alias of map_location arguments; tdx.load takes the same forms
VAR_DEPENDENCY = "dependencies"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
READ_DATA_CHUNK = 128 * 1024
_hub_dir = [None]
_builtin_list = list


class HubDownloadError(TdxError, OSError):
    """A hub download could not reach its URL (no network, refused connection, missing file)."""


def _get_torch_home() -> str:
    """torch's cache root: ``$TORCH_HOME``, else ``$XDG_CACHE_HOME/torch`` (``~/.cache/torch``); transformers
    before 5.20 imports this private name of torch's."""
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME,
                                                                              DEFAULT_CACHE_DIR), "torch")))


def get_dir() -> str:
    """The hub cache: ``set_dir``'s directory, else ``_get_torch_home()/hub``."""
    if _hub_dir[0] is not None:
        return _hub_dir[0]
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d) -> None:
    """Use directory ``d`` as the hub cache."""
    _hub_dir[0] = os.path.expanduser(os.fspath(d))


def download_url_to_file(url: str, dst: str, hash_prefix=None, progress: bool = True) -> None:
    """Write the object at ``url`` to ``dst``, checking that its SHA-256 starts with ``hash_prefix`` if given.

    Raises:
        HubDownloadError: the URL cannot be reached or read.
        TdxRuntimeError: the hash does not match (``dst`` is not written).
    """
    dst = os.path.expanduser(os.fspath(dst))
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    request = urllib.request.Request(url, headers={"User-Agent": "torch.hub"})
    tmp = tempfile.NamedTemporaryFile(delete=False, dir=folder, suffix=".partial")
    try:
        digest = hashlib.sha256()
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the user's URL
                while True:
                    chunk = response.read(READ_DATA_CHUNK)
                    if not chunk:
                        break
                    tmp.write(chunk)
                    digest.update(chunk)
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            raise HubDownloadError(errno.EIO, f"torch.hub could not download {url!r}: {reason} (tdx downloads "
                                   "nothing offline; put the file in the hub cache, get_dir(), or pass a local "
                                   "path)") from err
        tmp.close()
        if hash_prefix is not None and not digest.hexdigest().startswith(hash_prefix):
            raise TdxRuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest.hexdigest()}")')
        shutil.move(tmp.name, dst)
    finally:
        tmp.close()
        if os.path.exists(tmp.name):
            os.remove(tmp.name)


def load_state_dict_from_url(url: str, model_dir=None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name=None, weights_only: bool = False):
    """``tdx.load`` of the file at ``url``, cached in ``model_dir`` (``get_dir()/checkpoints``); downloaded
    first when not cached (``check_hash``: the file name's ``-<sha256 prefix>`` must match)."""
    model_dir = os.path.join(get_dir(), "checkpoints") if model_dir is None else os.fspath(model_dir)
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urllib.parse.urlparse(url).path)
    cached = os.path.join(model_dir, filename)
    if not os.path.exists(cached):
        prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            prefix = match.group(1) if match else None
        download_url_to_file(url, cached, prefix, progress=progress)
    from ..serialization import load as _load

    return _load(cached, map_location=map_location, weights_only=weights_only)


def _import_hubconf(repo_dir: str):
    path = os.path.join(repo_dir, MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise TdxValueError(f"torch.hub: {repo_dir!r} has no {MODULE_HUBCONF}")
    spec = importlib.util.spec_from_file_location("hubconf", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, repo_dir)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(repo_dir)
    missing = [d for d in getattr(module, VAR_DEPENDENCY, []) or [] if importlib.util.find_spec(d) is None]
    if missing:
        raise TdxRuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entry(module, model: str):
    if not isinstance(model, str):
        raise TdxValueError("Invalid input: model should be a string of function name")
    func = getattr(module, model, None)
    if func is None or not callable(func):
        raise TdxRuntimeError(f"Cannot find callable {model} in hubconf")
    return func


def _github_dir(repo: str, force_reload: bool) -> str:
    owner_name, _, ref = repo.partition(":")
    owner, _, name = owner_name.partition("/")
    if not owner or not name:
        raise TdxValueError(f'Invalid input: repo_or_dir should be of the form "repo_owner/repo_name[:ref]", got '
                            f"{repo!r}")
    ref = ref or "main"
    target = os.path.join(get_dir(), f"{owner}_{name}_{ref.replace('/', '_')}")
    if os.path.isdir(target) and not force_reload:
        return target
    archive = target + ".zip"
    download_url_to_file(f"https://github.com/{owner}/{name}/zipball/{ref}", archive)
    with zipfile.ZipFile(archive) as zf:
        root = zf.namelist()[0].split("/")[0]
        zf.extractall(get_dir())
    os.remove(archive)
    shutil.rmtree(target, ignore_errors=True)
    shutil.move(os.path.join(get_dir(), root), target)
    return target


def _repo_dir(repo_or_dir: str, source: str, force_reload: bool) -> str:
    if source not in ("github", "local"):
        raise TdxValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return os.fspath(repo_or_dir)
    return _github_dir(repo_or_dir, force_reload)


def load(repo_or_dir, model, *args, source: str = "github", trust_repo=None, force_reload: bool = False,
         verbose: bool = True, skip_validation: bool = False, **kwargs):
    """The result of entry point ``model`` of ``repo_or_dir``'s ``hubconf.py`` called with the arguments."""
    repo_dir = _repo_dir(repo_or_dir, source.lower() if isinstance(source, str) else source, force_reload)
    module = _import_hubconf(repo_dir)
    sys.path.insert(0, repo_dir)
    try:
        return _entry(module, model)(*args, **kwargs)
    finally:
        sys.path.remove(repo_dir)


def list(github, force_reload: bool = False, skip_validation: bool = False, trust_repo=None,  # noqa: A001
         verbose: bool = True) -> _builtin_list:
    """The entry points of a repository's ``hubconf.py`` (``github`` may also be a local directory)."""
    repo_dir = os.fspath(github) if os.path.isdir(os.fspath(github)) else _github_dir(github, force_reload)
    module = _import_hubconf(repo_dir)
    return [f for f in dir(module) if callable(getattr(module, f)) and not f.startswith("_")]


def help(github, model, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo=None) -> str:
    """The docstring of entry point ``model`` (``github`` may also be a local directory)."""
    repo_dir = os.fspath(github) if os.path.isdir(os.fspath(github)) else _github_dir(github, force_reload)
    return _entry(_import_hubconf(repo_dir), model).__doc__


