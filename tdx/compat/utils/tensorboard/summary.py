"""TensorBoard summary protos from NumPy values: scalar, histogram, image (PNG), text, hparams.

The values arrive as NumPy arrays (the writer converts tdx tensors with ``Tensor.numpy()``); the
protos are the ``tensorboard`` package's own (``tensorboard.compat.proto``, and the hparams and text
plugins' data), so TensorBoard and its ``EventAccumulator`` read them as they read torch's. Images
are encoded as PNG here (zlib), without an imaging library. Must never import a framework.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

from ...._errors import TdxTypeError, TdxValueError

__all__ = ["scalar", "histogram", "image", "text", "hparams", "to_hwc", "make_grid", "tensorflow_bins"]


def scalar(tag: str, value) -> Summary:
    """A scalar summary (``simple_value``) of a one-element value."""
    arr = np.asarray(value)
    if arr.size != 1:
        raise TdxValueError(f"add_scalar({tag!r}): scalar_value must hold exactly one element, got shape "
                            f"{tuple(arr.shape)}")
    return Summary(value=[Summary.Value(tag=tag, simple_value=float(arr.reshape(-1)[0]))])


def tensorflow_bins() -> list:
    """torch's ``bins="tensorflow"`` edges: +-1e-12 growing by 10% up to 1e20, and 0."""
    v, buckets = 1e-12, []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    return [-b for b in reversed(buckets)] + [0] + buckets


def histogram(tag: str, values, bins, max_bins=None) -> Summary:
    """A histogram summary of every element of ``values`` (empty leading/trailing buckets dropped)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size == 0:
        raise TdxValueError(f"add_histogram({tag!r}): the input has no element")
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    if max_bins is not None and num_bins > max_bins:
        subsampling = num_bins // max_bins
        subsampling_remainder = num_bins % subsampling
        if subsampling_remainder != 0:
            counts = np.pad(counts, (0, subsampling - subsampling_remainder), constant_values=0)
        counts = counts.reshape(-1, subsampling).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1] = limits[:-1:subsampling]
        new_limits[-1] = limits[-1]
        limits = new_limits
    # keep the buckets from the one before the first non-empty bucket to the last non-empty one (torch's
    # trimming: TensorBoard draws the rise from zero); bucket_limit holds each kept bucket's right edge
    nonzero = np.nonzero(counts)[0]
    first, last = int(nonzero[0]), int(nonzero[-1])
    counts = counts[first - 1:last + 1] if first > 0 else np.concatenate([[0], counts[:last + 1]])
    edges = limits[first:last + 2]
    proto = HistogramProto(min=float(values.min()), max=float(values.max()), num=int(values.size),
                           sum=float(values.sum()), sum_squares=float(values.dot(values)),
                           bucket_limit=edges.tolist(), bucket=counts.astype(np.float64).tolist())
    return Summary(value=[Summary.Value(tag=tag, histo=proto)])


def to_hwc(arr: np.ndarray, dataformats: str) -> np.ndarray:
    """``arr`` laid out as height x width x 3 (or 4) channels, from ``dataformats`` (``CHW``, ``HWC``, ``HW``...)."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or len(fmt) != arr.ndim or not set(fmt) <= set("NCHW"):
        raise TdxValueError(f"dataformats={dataformats!r} does not fit an image of shape {tuple(arr.shape)}; "
                            "accepted: one letter per dimension out of N, C, H, W (e.g. 'CHW', 'HWC', 'HW', 'NCHW')")
    if "N" in fmt:
        arr = make_grid(np.transpose(arr, [fmt.index(c) for c in "NCHW" if c in fmt]) if "C" in fmt else
                        np.transpose(arr, [fmt.index(c) for c in "NHW"])[:, None])
        fmt = "CHW"
    if "C" not in fmt:
        arr = np.transpose(arr, [fmt.index("H"), fmt.index("W")])[:, :, None]
    else:
        arr = np.transpose(arr, [fmt.index("H"), fmt.index("W"), fmt.index("C")])
    if arr.shape[2] == 1:
        arr = np.concatenate([arr] * 3, axis=2)
    return arr


def make_grid(batch: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Images ``N x C x H x W`` tiled into one ``C x H' x W'`` image, ``ncols`` per row (torch's layout)."""
    if batch.shape[1] == 1:
        batch = np.concatenate([batch] * 3, axis=1)
    n, c, h, w = batch.shape
    ncols = min(n, ncols)
    nrows = int(np.ceil(n / ncols))
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=batch.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = batch[i]
    return canvas


def _png(hwc: np.ndarray) -> bytes:
    h, w, c = hwc.shape
    raw = b"".join(b"\x00" + hwc[y].tobytes() for y in range(h))
    color = {3: 2, 4: 6}[c]

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def image(tag: str, arr: np.ndarray, dataformats: str) -> Summary:
    """An image summary: floats are taken in [0, 1] and scaled by 255, uint8 as is (torch's rule)."""
    hwc = to_hwc(np.asarray(arr), dataformats)
    scale = 1 if hwc.dtype == np.uint8 else 255
    hwc = np.ascontiguousarray((hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8))
    h, w, c = hwc.shape
    img = Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=_png(hwc))
    return Summary(value=[Summary.Value(tag=tag, image=img)])


def text(tag: str, text_string: str) -> Summary:
    """A text summary (the text plugin's string tensor)."""
    from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
    tensor = TensorProto(dtype="DT_STRING", string_val=[text_string.encode("utf_8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=tensor)])


def _hparams_summary(tag: str, **content) -> Summary:
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    data = HParamsPluginData(version=0, **content).SerializeToString()
    meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="hparams", content=data))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta)])


def hparams(hparam_dict: dict, metric_dict: dict, hparam_domain_discrete=None) -> tuple:
    """The hparams plugin's experiment, session-start and session-end summaries (torch's layout).

    Raises:
        TdxTypeError: a hyperparameter value that is not a number, str, bool or one-element tensor.
    """
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.plugin_data_pb2 import SessionEndInfo, SessionStartInfo

    domains = hparam_domain_discrete or {}
    ssi = SessionStartInfo()
    infos = []
    for key, value in hparam_dict.items():
        if value is None:
            continue
        info = HParamInfo(name=key)
        if isinstance(value, (int, float)):  # bool included, as torch records it: a number
            ssi.hparams[key].number_value = value
            info.type = DataType.Value("DATA_TYPE_FLOAT64")
        elif isinstance(value, str):
            ssi.hparams[key].string_value = value
            info.type = DataType.Value("DATA_TYPE_STRING")
        elif hasattr(value, "numpy") and getattr(value, "numel", lambda: 0)() == 1:
            ssi.hparams[key].number_value = float(value.item())
            info.type = DataType.Value("DATA_TYPE_FLOAT64")
        else:
            raise TdxTypeError(f"add_hparams(): hparam {key!r} has value {value!r}; accepted: int, float, str, "
                               "bool or a one-element tensor")
        if key in domains:
            info.domain_discrete.extend(domains[key])
        infos.append(info)
    metrics = [MetricInfo(name=MetricName(tag=k)) for k in metric_dict]
    exp = _hparams_summary("_hparams_/experiment", experiment=Experiment(hparam_infos=infos, metric_infos=metrics))
    start = _hparams_summary("_hparams_/session_start_info", session_start_info=ssi)
    end = _hparams_summary("_hparams_/session_end_info",
                           session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS")))
    return exp, start, end
