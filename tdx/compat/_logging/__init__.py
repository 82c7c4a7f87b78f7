"""``tdx._logging`` (torch._logging): the logging switches of torch's compiler stack, accepted as torch's.

``set_logs(...)`` takes torch's keywords; the ones naming components tdx does not have (Dynamo, Inductor,
AOTAutograd, their graphs and guards) have nothing to log in tdx, so they change nothing, and ``modules=`` sets
the levels of the named Python loggers as torch's does. ``getArtifactLogger`` returns the Python logger torch
would; ``LazyString`` formats its message only when printed, and ``warning_once`` warns once per message, as
torch's. Never imports a framework.
"""

from __future__ import annotations

import logging

import functools

__all__ = ["set_logs", "getArtifactLogger", "LazyString", "warning_once"]


class LazyString:
    """A message made by ``func(*args, **kwargs)`` only when it is turned into a string (torch's)."""

    def __init__(self, func, *args, **kwargs) -> None:
        self.func, self.args, self.kwargs = func, args, kwargs

    def __str__(self) -> str:
        return self.func(*self.args, **self.kwargs)


@functools.cache
def warning_once(logger_obj, *args, **kwargs) -> None:
    """``logger_obj.warning(*args, **kwargs)`` the first time these arguments are seen (torch's)."""
    logger_obj.warning(*args, **kwargs)


def set_logs(*, modules: dict | None = None, **settings) -> None:
    """Set the log levels of torch's components (nothing to log in tdx) and, with ``modules``, of Python loggers.

    Args:
        modules: ``{logger name: level}`` (a ``logging`` level, or True/False for DEBUG/WARNING).
        settings: torch's per-component keywords (``dynamo=logging.INFO``, ``graph_breaks=True``...).
    """
    for name, level in (modules or {}).items():
        if isinstance(level, bool):
            level = logging.DEBUG if level else logging.WARNING
        logging.getLogger(name).setLevel(level)


def getArtifactLogger(module_qname: str, artifact_name: str) -> logging.Logger:  # noqa: N802 - torch's name
    """The logger of artifact ``artifact_name`` under module ``module_qname`` (a plain Python logger)."""
    return logging.getLogger(f"{module_qname}.__{artifact_name}")
