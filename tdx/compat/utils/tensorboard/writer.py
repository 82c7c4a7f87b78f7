"""``SummaryWriter``: TensorBoard event files from tdx values, through the ``tensorboard`` package.

Each ``add_*`` turns its value (a tdx tensor of any executor, a NumPy array or a number) into a
NumPy array, builds the summary proto (:mod:`.summary`) and appends it to the run's event file with
tensorboard's own ``EventFileWriter`` (flushed every ``flush_secs`` and at ``flush``/``close``).
``add_scalars`` writes one sub-run per key (``<log_dir>/<main_tag>_<key>``) and ``add_hparams`` one
sub-run per call, as torch does. ``add_graph`` is refused (it needs TorchScript tracing).
Must never import a framework.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ....aliasing import refused
from . import summary as S

__all__ = ["SummaryWriter", "FileWriter"]


def _numpy(value):
    """``value`` as a NumPy array (tdx tensors detached and brought to the host first)."""
    if hasattr(value, "detach") and hasattr(value, "numpy") and hasattr(value, "_ex"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


class FileWriter:
    """One event file: summaries stamped with step and wall time."""

    def __init__(self, log_dir: str, max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = ""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        return self.event_writer.get_logdir()

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(global_step)
        self.event_writer.add_event(event)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()


class SummaryWriter:
    """Write TensorBoard event files into ``log_dir`` (default ``runs/<date>_<host><comment>``).

    Args:
        log_dir: the run's folder.
        comment: appended to the default folder name (ignored with ``log_dir``).
        purge_step: accepted as torch's (events are appended; nothing is purged).
        max_queue: events held before a write.
        flush_secs: seconds between automatic flushes.
        filename_suffix: appended to the event file's name.
    """

    def __init__(self, log_dir=None, comment: str = "", purge_step=None, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = ""):
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self.file_writer = FileWriter(self.log_dir, max_queue, flush_secs, filename_suffix)
        self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
        self.default_bins = S.tensorflow_bins()

    def get_logdir(self) -> str:
        """The run's folder."""
        return self.log_dir

    def _get_file_writer(self) -> FileWriter:
        if self.file_writer is None:  # reopened after close(), as torch's
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
        return self.file_writer

    def add_scalar(self, tag: str, scalar_value, global_step=None, walltime=None, new_style: bool = False,
                   double_precision: bool = False) -> None:
        """Log one number (a float, or a one-element tensor of any executor) under ``tag``."""
        self._get_file_writer().add_summary(S.scalar(tag, _numpy(scalar_value)), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step=None, walltime=None) -> None:
        """Log several numbers on one chart: one sub-run ``<log_dir>/<main_tag>_<key>`` per key."""
        walltime = time.time() if walltime is None else walltime
        base = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            path = os.path.join(base, main_tag.replace("/", "_") + "_" + tag)
            writer = self.all_writers.get(path)
            if writer is None:
                writer = self.all_writers[path] = FileWriter(path, self.max_queue, self.flush_secs,
                                                             self.filename_suffix)
            writer.add_summary(S.scalar(main_tag, _numpy(value)), global_step, walltime)

    def add_histogram(self, tag: str, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """Log the distribution of ``values`` (``bins``: ``"tensorflow"``, a NumPy bins rule or count)."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(S.histogram(tag, _numpy(values), bins, max_bins), global_step, walltime)

    def add_image(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats: str = "CHW") -> None:
        """Log one image (floats in [0, 1] or uint8), laid out as ``dataformats`` says."""
        self._get_file_writer().add_summary(S.image(tag, _numpy(img_tensor), dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor, global_step=None, walltime=None, dataformats: str = "NCHW") -> None:
        """Log a batch of images as one grid image."""
        self._get_file_writer().add_summary(S.image(tag, _numpy(img_tensor), dataformats), global_step, walltime)

    def add_text(self, tag: str, text_string: str, global_step=None, walltime=None) -> None:
        """Log a (Markdown) text."""
        self._get_file_writer().add_summary(S.text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None) -> None:
        """Log one hyperparameter run with its metrics into the sub-run ``run_name`` (default: the time).

        Raises:
            TdxTypeError: ``hparam_dict`` or ``metric_dict`` is not a dict, or a value is of no accepted type.
        """
        from ...._errors import TdxTypeError

        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TdxTypeError("hparam_dict and metric_dict should be dictionary.")
        exp, start, end = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w_hp:
            for proto in (exp, start, end):
                w_hp.file_writer.add_summary(proto, global_step)
            for key, value in metric_dict.items():
                w_hp.add_scalar(key, value, global_step)

    def add_graph(self, model, input_to_model=None, verbose: bool = False, use_strict_trace: bool = True) -> None:
        """Refused: TensorBoard's graph comes from TorchScript tracing, which tdx does not have.

        Raises:
            UnsupportedOpError: always, naming ``SummaryWriter.add_graph`` and why.
        """
        refused.refuse_method("SummaryWriter", "add_graph")

    def flush(self) -> None:
        """Write every pending event to disk."""
        for writer in self.all_writers.values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file (a later ``add_*`` opens a new one)."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
